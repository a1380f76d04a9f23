//! A small bounded HTTP/1.1 server on `std::net`, requests parsed by `httparse` (already in
//! the CLI's tree through ureq): GET only, a thread per connection, at most
//! [`MAX_CONNECTIONS`] at once (more are answered 503 and closed), headers of at most
//! [`MAX_HEADER_BYTES`] bytes and [`MAX_HEADERS`] lines (431 past that), at most
//! [`MAX_REQUESTS`] requests per connection, and a connection idle for [`IDLE`] is closed.
//! Every request must carry the token (`?t=TOKEN`), else it gets 403.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// Bytes of a request line and its headers.
pub const MAX_HEADER_BYTES: usize = 8192;
/// Header lines.
pub const MAX_HEADERS: usize = 32;
/// Requests on one connection.
pub const MAX_REQUESTS: usize = 1000;
/// A connection waiting this long for a request is closed.
pub const IDLE: Duration = Duration::from_secs(10);

/// A parsed request: the path and its query parameters (percent-decoding is not needed: the
/// page sends only plain values).
pub struct Request {
    pub path: String,
    pub query: Vec<(String, String)>,
    /// The client asked to close after this request (`Connection: close`, or HTTP/1.0).
    pub close: bool,
}

impl Request {
    /// The value of query parameter `k`.
    pub fn param(&self, k: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// What a handler answers.
pub enum Reply {
    /// A whole response.
    Full {
        status: u16,
        ctype: &'static str,
        body: Vec<u8>,
        headers: Vec<(&'static str, String)>,
    },
    /// A stream (server-sent events): the headers are written, then the function writes until
    /// the client goes away or the server stops; the connection is closed after it.
    Stream(Box<dyn FnOnce(&mut TcpStream) + Send>),
}

impl Reply {
    pub fn ok(ctype: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status: 200,
            ctype,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    pub fn status(status: u16, why: &str) -> Reply {
        Reply::Full {
            status,
            ctype: "text/plain; charset=utf-8",
            body: format!("{why}\n").into_bytes(),
            headers: Vec::new(),
        }
    }
}

/// The handler of every request that carries the token.
pub type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// Serves `listener` until `stop` is set (checked between accepts: the listener is
/// non-blocking, polled every 50 ms).
pub fn serve(listener: TcpListener, token: String, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    let active = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(token);
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        let (mut s, _) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(_) => continue,
        };
        let _ = s.set_nonblocking(false);
        // Relaxed: the count only bounds how many threads run; it orders no other memory.
        if active.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::Relaxed);
            let _ = write_full(
                &mut s,
                503,
                "text/plain",
                b"too many connections\n",
                &[],
                true,
            );
            continue;
        }
        let (count, token, handler, stop) =
            (active.clone(), token.clone(), handler.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("live-http".into())
            .spawn(move || {
                connection(s, &token, &*handler, &stop);
                count.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            // The thread never ran: its count is taken back here.
            active.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Serves one connection: requests one after the other until it closes, errs, idles, or has
/// had [`MAX_REQUESTS`].
fn connection(mut s: TcpStream, token: &str, handler: &Handler, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(IDLE));
    let _ = s.set_write_timeout(Some(IDLE));
    let mut buf = Vec::with_capacity(1024);
    for n in 0..MAX_REQUESTS {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let (req, used) = match read_request(&mut s, &mut buf) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err((status, why)) => {
                let _ = write_full(&mut s, status, "text/plain", why.as_bytes(), &[], true);
                return;
            }
        };
        buf.drain(..used);
        let last = n + 1 == MAX_REQUESTS || req.close;
        if req.param("t") != Some(token) {
            let _ = write_full(
                &mut s,
                403,
                "text/plain",
                b"forbidden: the URL needs the token typhon-rec live printed (?t=...)\n",
                &[],
                last,
            );
            if last {
                return;
            }
            continue;
        }
        match handler(&req) {
            Reply::Full {
                status,
                ctype,
                body,
                headers,
            } => {
                if write_full(&mut s, status, ctype, &body, &headers, last).is_err() || last {
                    return;
                }
            }
            Reply::Stream(f) => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n\r\n";
                if s.write_all(head.as_bytes())
                    .and_then(|_| s.flush())
                    .is_err()
                {
                    return;
                }
                f(&mut s);
                return;
            }
        }
    }
}

/// Reads one request's head into `buf` (which may hold bytes of the next request already).
/// `Ok(None)`: the client closed or idled between requests. A body is refused (GET only).
fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<Option<(Request, usize)>, (u16, &'static str)> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(used)) => {
                if req.method != Some("GET") {
                    return Err((405, "only GET is served\n"));
                }
                let body = req.headers.iter().any(|h| {
                    (h.name.eq_ignore_ascii_case("content-length") && h.value != b"0")
                        || h.name.eq_ignore_ascii_case("transfer-encoding")
                });
                if body {
                    return Err((413, "a request body is not accepted\n"));
                }
                let close = req.version == Some(0)
                    || req.headers.iter().any(|h| {
                        h.name.eq_ignore_ascii_case("connection")
                            && h.value.eq_ignore_ascii_case(b"close")
                    });
                let target = req.path.unwrap_or("/");
                let (path, q) = target.split_once('?').unwrap_or((target, ""));
                let query = q
                    .split('&')
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once('=').unwrap_or((p, ""));
                        (k.to_owned(), v.to_owned())
                    })
                    .collect();
                return Ok(Some((
                    Request {
                        path: path.to_owned(),
                        query,
                        close,
                    },
                    used,
                )));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Err((431, "too many header lines\n"));
            }
            Err(_) => return Err((400, "malformed request\n")),
        }
        if buf.len() >= MAX_HEADER_BYTES {
            return Err((431, "request headers too large\n"));
        }
        let mut chunk = [0u8; 2048];
        let room = (MAX_HEADER_BYTES - buf.len()).min(chunk.len());
        match s.read(&mut chunk[..room]) {
            Ok(0) => return Ok(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Ok(None),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

fn write_full(
    s: &mut TcpStream,
    status: u16,
    ctype: &str,
    body: &[u8],
    headers: &[(&'static str, String)],
    close: bool,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'self'\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}
