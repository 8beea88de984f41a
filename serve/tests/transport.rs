//! The transport serving a handler of the test's on a loopback port: what it refuses before
//! a request is read whole, and the write timeout.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use counterhal_serve::http::{Handler, Layer, Limits, Request, Response, Server, Tally};

/// A handler that answers `/slow` after a pause, `/large` with 32 MiB, and the rest with
/// their path.
struct Paths {
    pause: Duration,
}

impl Handler for Paths {
    fn handle(&self, request: &Request<'_>) -> Response {
        let body = match request.path() {
            "/slow" => {
                std::thread::sleep(self.pause);
                b"rendered late\n".to_vec()
            }
            "/large" => vec![b'x'; 32 << 20],
            path => path.as_bytes().to_vec(),
        };
        Response::new(200, "text/plain; charset=utf-8", body)
    }
}

/// [`Paths`] (its `/slow` taking `pause`) served on a loopback port within `limits`, on a
/// thread of its own: where, and the tally that counts its requests.
fn serving(pause: Duration, limits: Limits) -> (SocketAddr, Arc<Tally>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let tally = Arc::new(Tally::default());
    let layer = Layer::new(Paths { pause }, None);
    let server = Server::new(listener, limits, layer, Arc::clone(&tally));
    std::thread::spawn(move || server.serve());
    (address, tally)
}

/// Bounds that let every test's client through: 16 connections, 5 s for a head, 5 s to take
/// an answer.
fn roomy() -> Limits {
    Limits::new(16, Duration::from_secs(5), Duration::from_secs(5))
}

/// Sends `request` and reads until the server closes: the status and the whole answer
/// (`None` where the connection closed without one).
fn exchange(address: SocketAddr, request: &[u8]) -> (Option<u16>, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    stream.write_all(request).ok();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok();
    let text = String::from_utf8_lossy(&answer).to_string();
    (text.split(' ').nth(1).and_then(|s| s.parse().ok()), text)
}

/// The requests `tally` counts as answered with `status`.
fn answered(tally: &Tally, status: u16) -> u64 {
    tally
        .requests()
        .find(|&(s, _)| s == status)
        .map_or(0, |(_, count)| count)
}

/// The connections `tally` counts as closed unanswered for `reason` (its label).
fn closed(tally: &Tally, reason: &str) -> u64 {
    tally
        .closed_counts()
        .find(|(why, _)| why.label() == reason)
        .map_or(0, |(_, count)| count)
}

/// Malformed heads are refused (400), so are heads past the 8 KiB buffer or the 32 lines
/// taken (431), each counted by its status; a request after them is answered.
///
/// Oracle: RFC 9112 (the request line and field syntax: 400) and RFC 6585 (431: "Request
/// Header Fields Too Large").
#[test]
fn malformed_and_oversized_heads_are_refused_and_requests_go_on() {
    let (address, tally) = serving(Duration::ZERO, roomy());
    for request in [
        b"GARBAGE\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/9.9\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/1.1\r\nBad Header\r\n\r\n".to_vec(),
        b"\x00\xff\xfe\r\n\r\n".to_vec(),
    ] {
        let (status, text) = exchange(address, &request);
        assert_eq!(status, Some(400), "{request:?}: {text}");
    }
    let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(100_000));
    let many: String = (0..40).map(|i| format!("X-{i}: y\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
    let huge_path = format!("GET /{} HTTP/1.1\r\n\r\n", "p".repeat(1 << 20));
    for request in [long, many, huge_path] {
        let (status, text) = exchange(address, request.as_bytes());
        assert_eq!(status, Some(431), "{}: {text}", &request[..30]);
    }
    let (status, text) = exchange(address, b"GET /after HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, Some(200), "{text}");
    assert!(text.ends_with("\r\n\r\n/after"), "{text}");
    assert_eq!((answered(&tally, 400), answered(&tally, 431)), (4, 3));
}

/// A request in the absolute form (`GET http://host:port/path`), which RFC 9112 section
/// 3.2.2 says a server must accept, names the path the origin form names (before: 404).
///
/// Oracle: curl (Debian's), whose `--request-target` sends the target as given, as a client
/// configured with a proxy sends it.
#[test]
fn a_request_in_the_absolute_form_is_answered_as_its_path() {
    let (address, _) = serving(Duration::ZERO, roomy());
    let (status, text) = exchange(
        address,
        format!("GET http://{address}/absolute?x=1 HTTP/1.1\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(status, Some(200), "{text}");
    assert!(text.ends_with("\r\n\r\n/absolute"), "{text}");
    let curl = std::process::Command::new("curl")
        .args(["-s", "--request-target"])
        .arg(format!("http://{address}/by-curl"))
        .arg(format!("http://{address}/"))
        .output();
    let Ok(curl) = curl else {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Tools,
            "curl is not installed (apt-get install curl)"
        );
    };
    assert!(curl.status.success(), "{curl:?}");
    assert_eq!(String::from_utf8_lossy(&curl.stdout), "/by-curl");
}

/// A `HEAD` is answered with the head alone: the status, and the `Content-Length` the body
/// would have.
///
/// Oracle: RFC 9110 9.3.2 (the server "SHOULD send the same header fields" as for `GET`,
/// and no content).
#[test]
fn a_head_is_answered_with_the_head_alone() {
    let (address, _) = serving(Duration::ZERO, roomy());
    let (status, text) = exchange(
        address,
        b"HEAD /twelve-byte HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, Some(200), "{text}");
    assert!(text.contains("Content-Length: 12\r\n"), "{text}");
    assert!(
        text.ends_with("\r\n\r\n"),
        "a HEAD answer has no body: {text}"
    );
}

/// An answer slower to render than the write timeout is still answered: the timeout runs
/// from the moment the answer is rendered. (Go's net/http starts its `WriteTimeout` when the
/// request head is read, so that a slower handler sends nothing; node_exporter serves
/// through exporter-toolkit with no `WriteTimeout`, so that a slow scrape is answered late.)
///
/// Oracle: node_exporter 1.x (`web.ListenAndServe` of an `http.Server{}`): a slow scrape is
/// answered, however late.
#[test]
fn an_answer_slower_to_render_than_the_write_timeout_is_answered() {
    let limits = Limits::new(4, Duration::from_secs(5), Duration::from_millis(50));
    let (address, tally) = serving(Duration::from_millis(400), limits);
    let started = Instant::now();
    let (status, text) = exchange(address, b"GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, Some(200), "{text:?}");
    assert!(text.ends_with("rendered late\n"), "{text}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(closed(&tally, "write_timeout"), 0);
}

/// The write timeout still bounds a client that does not take its answer: the connection
/// is closed and counted as `write_timeout`.
///
/// Oracle: the kernel's socket buffers (a 32 MiB answer does not fit a loopback socket's,
/// some megabytes, so the server's writes block until the client reads).
#[test]
fn a_client_that_does_not_read_is_closed_at_the_write_timeout() {
    let limits = Limits::new(4, Duration::from_secs(5), Duration::from_millis(300));
    let (address, tally) = serving(Duration::ZERO, limits);
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .write_all(b"GET /large HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let waited = Instant::now();
    while closed(&tally, "write_timeout") == 0 && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        closed(&tally, "write_timeout"),
        1,
        "after {:?}",
        waited.elapsed()
    );
    assert_eq!(answered(&tally, 200), 0);
    drop(stream);
}
