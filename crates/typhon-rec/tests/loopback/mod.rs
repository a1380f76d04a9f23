//! An OTLP/HTTP receiver on 127.0.0.1 for the push tests, over plain TCP or TLS (a self-signed
//! certificate made here), that records every request (method, target, headers, decoded spans)
//! and answers as the test says. Connections are kept alive, as a Collector's are.

use prost::Message;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use typhon_trace::export::otlp::opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The request target: the path and the query.
    pub target: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    /// The decoded OTLP request (None: the body was not one; the answer was then 400).
    pub otlp: Option<ExportTraceServiceRequest>,
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// (trace id, span id) of every span in the request.
    pub fn spans(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let r = self.otlp.as_ref().expect("an OTLP request");
        r.resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .map(|s| (s.trace_id.clone(), s.span_id.clone()))
            .collect()
    }

    /// The `service.name` resource attribute of the request's first resource.
    pub fn service(&self) -> Option<String> {
        use typhon_trace::export::otlp::opentelemetry_proto::tonic::common::v1::any_value::Value;
        let r = self
            .otlp
            .as_ref()?
            .resource_spans
            .first()?
            .resource
            .as_ref()?;
        r.attributes
            .iter()
            .find(|a| a.key == "service.name")
            .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                Value::StringValue(s) => Some(s.clone()),
                _ => None,
            })
    }
}

/// What the receiver answers: a status and headers (the body is empty).
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
        }
    }

    pub fn with(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
}

type Answer = dyn Fn(usize, &Request) -> Reply + Send + Sync;

pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    /// Starts a receiver on 127.0.0.1 (TLS with `tls`) answering request `i` with
    /// `answer(i, request)`.
    pub fn start(
        tls: Option<Arc<rustls::ServerConfig>>,
        answer: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let answer: Arc<Answer> = Arc::new(answer);
        let g = got.clone();
        // The threads end with the test process; each serves one connection.
        std::thread::spawn(move || {
            for c in listener.incoming().flatten() {
                let (g, answer, tls) = (g.clone(), answer.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    Some(cfg) => {
                        let conn = rustls::ServerConnection::new(cfg).unwrap();
                        serve(rustls::StreamOwned::new(conn, c), &g, &*answer)
                    }
                    None => serve(c, &g, &*answer),
                });
            }
        });
        Receiver { port, got }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.got.lock().unwrap().clone()
    }
}

/// Serves the requests of one connection until it closes.
fn serve(mut s: impl Read + Write, got: &Mutex<Vec<Request>>, answer: &Answer) {
    let mut buf = Vec::new();
    loop {
        // The head.
        let (head_len, method, target, headers) = loop {
            let mut h = [httparse::EMPTY_HEADER; 64];
            let mut r = httparse::Request::new(&mut h);
            if let Ok(httparse::Status::Complete(n)) = r.parse(&buf) {
                let headers: Vec<(String, String)> = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                break (
                    n,
                    r.method.unwrap().to_string(),
                    r.path.unwrap().to_string(),
                    headers,
                );
            }
            let mut chunk = [0u8; 16384];
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map_or(0, |(_, v)| v.trim().parse().unwrap());
        while buf.len() < head_len + len {
            let mut chunk = [0u8; 16384];
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let mut body: Vec<u8> = buf.drain(..head_len + len).skip(head_len).collect();
        let gzip = headers
            .iter()
            .any(|(k, v)| k == "content-encoding" && v == "gzip");
        if gzip {
            let mut d = Vec::new();
            flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut d)
                .unwrap();
            body = d;
        }
        let otlp = (method == "POST")
            .then(|| ExportTraceServiceRequest::decode(&body[..]).ok())
            .flatten();
        let req = Request {
            method,
            target,
            headers,
            otlp,
            at: Instant::now(),
        };
        let reply = {
            let mut g = got.lock().unwrap();
            let reply = if req.otlp.is_none() && req.method == "POST" {
                Reply::status(400)
            } else {
                answer(g.len(), &req)
            };
            g.push(req);
            reply
        };
        let mut out = format!("HTTP/1.1 {} Test\r\nContent-Length: 0\r\n", reply.status);
        for (k, v) in &reply.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        if s.write_all(out.as_bytes()).and_then(|_| s.flush()).is_err() {
            return;
        }
    }
}

/// A self-signed certificate for 127.0.0.1: its PEM (for the client to trust) and a server
/// configuration presenting it.
pub struct SelfSigned {
    pub pem: String,
    pub config: Arc<rustls::ServerConfig>,
}

pub fn self_signed() -> SelfSigned {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(c.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![c.cert.der().clone()], key)
    .unwrap();
    SelfSigned {
        pem: c.cert.pem(),
        config: Arc::new(config),
    }
}

/// A port on 127.0.0.1 that accepts connections and never answers (each is held open).
pub fn silent() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    port
}
