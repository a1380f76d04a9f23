//! Running `typhon-rec live` for the tests: the server's URL from its first line, plain HTTP
//! requests, and the process ended by its pid when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Live {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub token: String,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Live {
    /// Starts `typhon-rec live PATH ARGS` and reads its URL.
    pub fn start(bin: &str, path: &Path, args: &[&str]) -> Live {
        let mut child = Command::new(bin)
            .arg("live")
            .arg(path)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        let rest = url.strip_prefix("http://").unwrap();
        let (addr, q) = rest.split_once("/?t=").unwrap();
        Live {
            child,
            addr: addr.to_owned(),
            token: q.to_owned(),
            // The URL is printed once the server listens.
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/?t={}", self.addr, self.token)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` (with `?t=TOKEN` appended when `token`): (status, headers, body).
    pub fn get(&self, path: &str, token: bool) -> (u16, String, Vec<u8>) {
        let sep = if path.contains('?') { '&' } else { '?' };
        let target = if token {
            format!("{path}{sep}t={}", self.token)
        } else {
            path.to_owned()
        };
        raw(
            &self.addr,
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }

    /// `/api/state` as JSON.
    pub fn state(&self) -> serde_json::Value {
        let (status, _, body) = self.get("/api/state", true);
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    }

    /// Polls `/api/state` until `done` holds (at most `secs`).
    pub fn wait_state(
        &self,
        secs: u64,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let t0 = std::time::Instant::now();
        loop {
            let s = self.state();
            if done(&s) {
                return s;
            }
            assert!(t0.elapsed().as_secs() < secs, "gave up waiting: {s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Sends `req` and reads the response until the server closes: (status, head, body).
pub fn raw(addr: &str, req: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The server may answer (and close) before it has read everything of an oversized request.
    let _ = s.write_all(req);
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&all)));
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    (status, head, all[split + 4..].to_vec())
}

/// The value of header `name` in `head`.
pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
