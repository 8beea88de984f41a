//! A `counterhal serve` run by a test and what it is asked over HTTP: the requests, sent as
//! they are, and [`Served`], an exporter killed when dropped.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::bin;

/// Sends `request` as it is and reads the answer until the exporter closes: its status and
/// the whole text (`None` when the connection closed without one, or none was made).
pub fn exchange(address: SocketAddr, request: &[u8]) -> (Option<u16>, String) {
    exchange_within(address, request, Duration::from_secs(20))
}

/// [`exchange`], waiting at most `limit` for each read of the answer (an exporter run under
/// a tool that slows it, such as memcheck, on a busy machine).
pub fn exchange_within(
    address: SocketAddr,
    request: &[u8],
    limit: Duration,
) -> (Option<u16>, String) {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return (None, String::new());
    };
    stream.set_read_timeout(Some(limit)).ok();
    stream.write_all(request).ok();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok();
    let text = String::from_utf8_lossy(&answer).to_string();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok());
    (status, text)
}

/// `GET path` with `accept`: the status and the body.
pub fn get(address: SocketAddr, path: &str, accept: Option<&str>) -> (Option<u16>, String) {
    get_within(address, path, accept, Duration::from_secs(20))
}

/// [`get`], waiting at most `limit` for each read of the answer ([`exchange_within`]).
pub fn get_within(
    address: SocketAddr,
    path: &str,
    accept: Option<&str>,
    limit: Duration,
) -> (Option<u16>, String) {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n{accept}\r\n");
    let (status, text) = exchange_within(address, request.as_bytes(), limit);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// A `counterhal serve` in one cgroup mode, killed when dropped.
pub struct Served {
    child: Child,
    /// Where it serves.
    pub address: SocketAddr,
    /// What it said on standard error after the line naming its address.
    said: Arc<Mutex<String>>,
}

impl Served {
    /// `counterhal serve --listen 127.0.0.1:0 ARGS`, or what it said before it ended (an
    /// error).
    pub fn start(args: &[&str]) -> Result<Served, String> {
        let mut child = Command::new(bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start counterhal serve");
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("its stderr")).lines();
        let mut first = String::new();
        let address = loop {
            let Some(Ok(line)) = lines.next() else {
                child.kill().ok();
                child.wait().ok();
                return Err(first);
            };
            let address = line.split("://").nth(1).and_then(|rest| {
                rest.split('/')
                    .next()
                    .and_then(|a| a.parse::<SocketAddr>().ok())
            });
            match address {
                Some(address) => break address,
                None => first += &format!("{line}\n"),
            }
        };
        let said = Arc::new(Mutex::new(first));
        let keep = Arc::clone(&said);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(mut said) = keep.lock() {
                    *said += &format!("{line}\n");
                }
            }
        });
        Ok(Served {
            child,
            address,
            said,
        })
    }

    /// What it has said on standard error so far (the line naming its address left out).
    pub fn said(&self) -> String {
        self.said.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// A scrape, which must be answered.
    pub fn scrape(&self) -> String {
        let (status, body) = get(self.address, "/metrics", None);
        assert_eq!(status, Some(200), "{body}");
        body
    }

    /// Its open descriptors (`/proc/PID/fd`).
    pub fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("its descriptors")
            .count()
    }

    /// Its resident memory (`VmRSS` of `/proc/PID/status`), in KiB.
    pub fn resident_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
