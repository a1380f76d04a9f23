//! Snapshots asked for from outside the process (`typhon-rec snapshot DIR`): a Unix socket,
//! `DIR/typhon.sock`, served by a `typhon-control` thread.
//!
//! The socket is mode 0600, and each peer's uid is checked (`SO_PEERCRED`): only this process's
//! effective user or root is served (the .NET diagnostic port's rule). A request is one line,
//! `snapshot`; the answer is one line, `ok PATH` or `error TEXT`. The requester names nothing:
//! the file goes to the recorder's own snapshot directory under a generated name.

use std::io::{self, BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How the control socket's thread has a snapshot taken: the new file's path or the error's
/// text, `None` once the recorder is gone. The lifecycle makes it (holding the recorder
/// weakly), so nothing here names the lifecycle.
pub(crate) type Serve = Box<dyn Fn() -> Option<Result<PathBuf, String>> + Send>;

/// The socket's name in the snapshot directory.
pub const SOCKET_NAME: &str = "typhon.sock";

/// The serving thread, stopped and joined when the recorder finishes.
pub(crate) struct Control {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl Control {
    /// Binds `dir/typhon.sock` (replacing a socket nobody listens on) and starts serving.
    /// `snapshot` holds only a weak reference to the recorder.
    pub(crate) fn start(dir: &Path, snapshot: Serve) -> io::Result<Self> {
        let path = dir.join(SOCKET_NAME);
        let listener = match UnixListener::bind(&path) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                if UnixStream::connect(&path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("{}: another recording serves it", path.display()),
                    ));
                }
                // Only a socket is replaced: a file of that name that is not one is refused.
                let meta = std::fs::symlink_metadata(&path)?;
                if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{}: exists and is not a socket", path.display()),
                    ));
                }
                std::fs::remove_file(&path)?;
                UnixListener::bind(&path)?
            }
            Err(e) => return Err(e),
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("typhon-control".into())
            .spawn(move || serve(listener, snapshot, s))?;
        Ok(Self {
            stop,
            thread: Some(thread),
            path,
        })
    }

    /// Stops serving, joins the thread and removes the socket.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(listener: UnixListener, snapshot: Serve, stop: Arc<AtomicBool>) {
    let fd = listener.as_raw_fd();
    while !stop.load(Ordering::Relaxed) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `p` is one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, 100) };
        if n <= 0 {
            continue;
        }
        let Ok((conn, _)) = listener.accept() else {
            continue;
        };
        if let Ok(false) = answer(conn, &snapshot) {
            return;
        }
    }
}

/// Serves one connection; `Ok(false)` if the recorder is gone (the connection is closed with
/// no answer, and nothing more is served).
fn answer(conn: UnixStream, snapshot: &Serve) -> io::Result<bool> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    // One write per answer: a reader taking what one read returns gets the whole line.
    let reply = |text: String| {
        (&conn)
            .write_all(format!("{text}\n").as_bytes())
            .map(|()| true)
    };
    let uid = crate::platform::peer_uid(conn.as_raw_fd())?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if uid != me && uid != 0 {
        return reply(format!(
            "error refused: uid {uid} is neither the recording's user (uid {me}) nor root"
        ));
    }
    let mut line = String::new();
    io::BufReader::new(&conn).take(256).read_line(&mut line)?;
    if line.trim_end() != "snapshot" {
        return reply("error unknown request (only `snapshot`)".into());
    }
    match snapshot() {
        None => Ok(false),
        Some(Ok(path)) => reply(format!("ok {}", path.display())),
        Some(Err(e)) => reply(format!("error {}", e.replace('\n', " "))),
    }
}

/// Asks the recording whose snapshot directory is `dir` for a snapshot, through its socket;
/// the path of the new file (`typhon-rec snapshot DIR`).
///
/// ```
/// let e = typhon_recorder::window::request_remote(std::path::Path::new("/nonexistent")).unwrap_err();
/// assert!(e.contains("/nonexistent/typhon.sock"));
/// ```
pub fn request_remote(dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join(SOCKET_NAME);
    let conn = UnixStream::connect(&path).map_err(|e| {
        format!(
            "{}: {e} (is a recording with this snapshot directory running, as this user?)",
            path.display()
        )
    })?;
    let msg = |e: io::Error| format!("{}: {e}", path.display());
    // A snapshot of a large window takes seconds.
    conn.set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(msg)?;
    // A recording that refuses this peer answers before it reads the request and closes:
    // the write may then fail (a broken pipe), but its answer is there to read, and it is the
    // error to report.
    let sent = (&conn).write_all(b"snapshot\n");
    let mut line = String::new();
    let read = io::BufReader::new(&conn)
        .take(64 * 1024)
        .read_line(&mut line);
    match (sent, read) {
        (_, Ok(n)) if n > 0 => {}
        (Err(e), _) | (Ok(()), Err(e)) => return Err(msg(e)),
        (Ok(()), Ok(_)) => {}
    }
    let line = line.trim_end();
    match line.strip_prefix("ok ") {
        Some(p) => Ok(PathBuf::from(p)),
        None => Err(format!(
            "{}: {}",
            path.display(),
            line.strip_prefix("error ").unwrap_or(if line.is_empty() {
                "the recording closed the connection"
            } else {
                line
            })
        )),
    }
}

use std::io::Read as _;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A recording that refuses a peer answers and closes before reading the request: the
    /// requester reports that answer, not the broken pipe its write may meet (it did in 3 of 5
    /// tries before).
    #[test]
    fn a_refusal_is_reported_even_when_the_request_cannot_be_written() {
        let dir =
            std::env::temp_dir().join(format!("typhon-control-refusal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let listener = UnixListener::bind(dir.join(SOCKET_NAME)).unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..20 {
                let (mut c, _) = listener.accept().unwrap();
                c.write_all(
                    b"error refused: uid 65534 is neither the recording's user (uid 0) nor root\n",
                )
                .unwrap();
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        });
        for _ in 0..20 {
            let e = request_remote(&dir).unwrap_err();
            assert!(
                e.ends_with("refused: uid 65534 is neither the recording's user (uid 0) nor root"),
                "{e}"
            );
        }
        server.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
