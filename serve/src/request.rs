//! One request: its head read into a fixed buffer within the header timeout and parsed by
//! `httparse` (no allocation), routed (`GET`/`HEAD` of `/metrics` and `/`; nothing changes
//! state), answered within the write timeout, and the connection closed. A head larger than
//! the buffer is refused (431), a malformed one too (400), a body never read (413 where one
//! is announced), a head that does not arrive in time closed (408). A scrape is gzipped for
//! a client that asks (`Accept-Encoding`, negotiated as promhttp negotiates it). With
//! `--web.config.file`: over TLS (a plain request to it answered 400 as Go's servers answer
//! it), over the rate limit 429, without the users' credentials 401, and the configured
//! headers on every answer.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::exposition::{self, Format};
use super::gzip;
use super::health::Closed;
use super::table::Shared;
use super::web::{Verdict, WebConfig};

/// A connection: a TCP stream, or TLS over one.
pub trait Conn: Read + Write {
    /// The TCP stream under it (its timeouts, its shutdown).
    fn tcp(&self) -> &TcpStream;
    /// Ends the conversation before the stream is shut down (TLS: its close_notify).
    fn finish(&mut self) {}
}

impl Conn for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Conn for StreamOwned<ServerConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    fn finish(&mut self) {
        self.conn.send_close_notify();
        // Within the write timeout set for the answer; a client gone takes none.
        let _written = self.conn.complete_io(&mut self.sock);
    }
}

/// Answers a connection to a TLS server: a plain HTTP request (its first byte not a TLS
/// handshake record's, 22) gets 400 in plain text, as Go's servers answer it; the rest is
/// TLS, handshake included within the header timeout.
pub fn answer_tls(
    stream: TcpStream,
    tls: Arc<ServerConfig>,
    id: u64,
    shared: &Shared,
    web: Option<&WebConfig>,
) {
    stream
        .set_read_timeout(Some(shared.limits.header_timeout))
        .ok();
    let mut first = [0u8; 1];
    match stream.peek(&mut first) {
        Ok(1) if first[0] == 22 => {}
        Ok(1) => {
            let text = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
                        Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
            stream
                .set_write_timeout(Some(shared.limits.write_timeout))
                .ok();
            if (&stream).write_all(text.as_bytes()).is_ok() {
                shared.health.answered(400);
            }
            stream.shutdown(Shutdown::Both).ok();
            return;
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            shared.health.closed(Closed::HeaderTimeout);
            stream.shutdown(Shutdown::Both).ok();
            return;
        }
        _ => return,
    }
    let Ok(connection) = ServerConnection::new(tls) else {
        return;
    };
    answer(StreamOwned::new(connection, stream), id, shared, web);
}

/// The largest request head taken (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// The most header lines taken.
pub const MAX_HEADERS: usize = 32;
/// The largest piece written before the deadline is looked at again.
const CHUNK: usize = 16 * 1024;

/// What a request asks for.
enum Route {
    /// The scrape, in a format, gzipped or not.
    Metrics(Format, bool),
    Index,
    Refused(u16, &'static str),
}

/// How long a kept connection may wait for its next request: Prometheus' own idle timeout
/// for the connections it keeps (its HTTP client's `IdleConnTimeout`). Meanwhile it is idle
/// in the table, and evicted for a new connection as any idle one is.
const KEPT_IDLE: Duration = Duration::from_secs(300);

/// Reads requests from `stream` (connection `id`) and answers them, one after the other
/// while the client keeps the connection (HTTP/1.1 without `Connection: close`, as
/// Prometheus keeps its connection to each target), then closes it.
pub fn answer(mut stream: impl Conn, id: u64, shared: &Shared, web: Option<&WebConfig>) {
    let mut kept = false;
    loop {
        let (answered, keep) = answer_one(&mut stream, id, shared, web, kept);
        if !keep || shared.draining.load(Relaxed) {
            if answered {
                stream.finish();
            }
            break;
        }
        shared.table.idle_again(id);
        kept = true;
    }
    stream.tcp().shutdown(Shutdown::Both).ok();
}

/// Reads one request (the next on a `kept` connection) and answers it: whether it was
/// answered, and whether the connection is kept for another.
fn answer_one(
    stream: &mut impl Conn,
    id: u64,
    shared: &Shared,
    web: Option<&WebConfig>,
    kept: bool,
) -> (bool, bool) {
    let limits = shared.limits;
    let mut head = [0u8; MAX_HEAD];
    let admit = |request: &httparse::Request<'_, '_>| match (&shared.web, web) {
        (Some(file), Some(config)) => {
            let authorization = request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("authorization"))
                .map(|h| h.value);
            file.admit(config, authorization)
        }
        _ => Verdict::Allowed,
    };
    let begun = || shared.table.begun(id);
    let timeouts = (limits.header_timeout, kept.then_some(KEPT_IDLE));
    let read = read_head(stream, &mut head, timeouts, admit, begun);
    let (route, head_only, keep) = match read {
        Ok(parsed) => parsed,
        Err(Unanswered::Gone) => return (false, false),
        Err(Unanswered::Tls) => {
            shared.health.closed(Closed::Tls);
            return (false, false);
        }
        Err(Unanswered::Late) => {
            shared.health.closed(Closed::HeaderTimeout);
            let late = Route::Refused(408, "the request head took too long");
            (late, false, false)
        }
    };
    shared.table.answering(id);
    let deadline = Instant::now() + limits.write_timeout;
    let mut gzipped = false;
    let (status, content_type, body) = match route {
        Route::Metrics(format, gzip) => {
            let mut body = Vec::with_capacity(shared.last_size.load(Relaxed));
            {
                let mut exporter = shared
                    .exporter
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let start = Instant::now();
                exporter.read_all(&shared.health);
                exposition::write(&mut body, format, &exporter, &shared.health, start);
            }
            shared.last_size.store(body.len(), Relaxed);
            if gzip {
                let mut compressed = Vec::new();
                let mut gzip = shared.gzip.lock().unwrap_or_else(|p| p.into_inner());
                gzip.compress(&body, &mut compressed);
                body = compressed;
                gzipped = true;
            }
            (200, format.content_type(), body)
        }
        Route::Index => {
            let exporter = shared
                .exporter
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (200, "text/html; charset=utf-8", index(&exporter))
        }
        Route::Refused(status, why) => (
            status,
            "text/plain; charset=utf-8",
            format!("{why}\n").into_bytes(),
        ),
    };
    let keep = keep && matches!(status, 200 | 404) && !shared.draining.load(Relaxed);
    let mut response = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\n",
        reason(status),
        body.len()
    );
    if !keep {
        response.push_str("Connection: close\r\n");
    }
    if gzipped {
        response.push_str("Content-Encoding: gzip\r\n");
    }
    if status == 405 {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    if status == 401 {
        response.push_str("WWW-Authenticate: Basic\r\n");
    }
    for (name, value) in web.map_or(&[][..], |web| &web.headers) {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    let written = write_before(stream, response.as_bytes(), deadline).and_then(|()| {
        if head_only {
            Ok(())
        } else {
            write_before(stream, &body, deadline)
        }
    });
    // Counted as answered once the client has taken the answer, else by why it did not.
    match written {
        Ok(()) => {
            shared.health.answered(status);
            (true, keep)
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            shared.health.closed(Closed::WriteTimeout);
            (false, false)
        }
        Err(_) => {
            shared.health.closed(Closed::ClientGone);
            (false, false)
        }
    }
}

/// Answers 503 to a connection that found no place, without waiting on it.
pub fn refuse(stream: TcpStream) {
    stream.set_nonblocking(true).ok();
    let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    // A nonblocking socket's first write: the 503 fits its buffer, or the client hears none.
    let _sent: Option<usize> = (&stream).write(text.as_bytes()).ok();
    stream.shutdown(Shutdown::Both).ok();
}

/// Why no request was read.
enum Unanswered {
    /// The client closed, or the connection was evicted or failed.
    Gone,
    /// The head did not arrive in time.
    Late,
    /// The TLS handshake failed (rustls' errors are `InvalidData`).
    Tls,
}

/// Reads the request head into `buffer` within `timeouts` and routes it (with whether it is
/// a `HEAD`, and whether the client keeps the connection), if `admit` lets it through;
/// `begun` is called when its first bytes are read. `timeouts`: the header timeout, and on a
/// kept connection how long it may wait for the next request's first byte (then the header
/// timeout runs from it; a kept connection that waits longer is closed, as it is idle).
fn read_head(
    stream: &mut impl Conn,
    buffer: &mut [u8; MAX_HEAD],
    timeouts: (Duration, Option<Duration>),
    admit: impl Fn(&httparse::Request<'_, '_>) -> Verdict,
    begun: impl Fn(),
) -> Result<(Route, bool, bool), Unanswered> {
    let (timeout, idle) = timeouts;
    let mut deadline = Instant::now() + idle.unwrap_or(timeout);
    let mut filled = 0;
    // Too late: before the first byte on a kept connection, it is only idle.
    let late = |filled: usize| match (filled, idle) {
        (0, Some(_)) => Unanswered::Gone,
        _ => Unanswered::Late,
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late(filled));
        }
        stream.tcp().set_read_timeout(Some(left)).ok();
        match stream.read(&mut buffer[filled..]) {
            Ok(0) => return Err(Unanswered::Gone),
            Ok(n) => {
                if filled == 0 {
                    begun();
                    if idle.is_some() {
                        deadline = Instant::now() + timeout;
                    }
                }
                filled += n;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(late(filled));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::InvalidData => return Err(Unanswered::Tls),
            Err(_) => return Err(Unanswered::Gone),
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buffer[..filled]) {
            Ok(httparse::Status::Complete(length)) => {
                // Kept: HTTP/1.1, no `Connection: close`, and nothing sent after the head.
                let keep = request.version == Some(1)
                    && length == filled
                    && !request.headers.iter().any(|h| {
                        h.name.eq_ignore_ascii_case("connection")
                            && h.value.eq_ignore_ascii_case(b"close")
                    });
                let (route, head_only) = match admit(&request) {
                    Verdict::Allowed => route(&request),
                    Verdict::TooMany => (Route::Refused(429, "over the rate limit"), false),
                    Verdict::Unauthorized => (Route::Refused(401, "unauthorized"), false),
                };
                return Ok((route, head_only, keep));
            }
            Ok(httparse::Status::Partial) if filled == buffer.len() => {
                let large = Route::Refused(431, "the request head is too large");
                return Ok((large, false, false));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                let many = Route::Refused(431, "too many header lines");
                return Ok((many, false, false));
            }
            Err(_) => return Ok((Route::Refused(400, "malformed request"), false, false)),
        }
    }
}

/// What a complete request asks for, and whether it is a `HEAD`.
fn route(request: &httparse::Request<'_, '_>) -> (Route, bool) {
    let head_only = request.method == Some("HEAD");
    if !matches!(request.method, Some("GET" | "HEAD")) {
        return (
            Route::Refused(405, "only GET and HEAD: no endpoint changes anything"),
            false,
        );
    }
    let announces_body = request.headers.iter().any(|h| {
        (h.name.eq_ignore_ascii_case("content-length")
            && std::str::from_utf8(h.value).map_or(true, |v| v.trim() != "0"))
            || h.name.eq_ignore_ascii_case("transfer-encoding")
    });
    if announces_body {
        return (
            Route::Refused(413, "a request body is never read"),
            head_only,
        );
    }
    let path = request.path.unwrap_or("");
    let path = path.split(['?', '#']).next().unwrap_or("");
    match path {
        "/metrics" => {
            let header = |name: &str| {
                request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
            };
            let format = Format::negotiate(header("accept"));
            let gzip = gzip::wanted(header("accept-encoding"));
            (Route::Metrics(format, gzip), head_only)
        }
        "/" => (Route::Index, head_only),
        _ => (Route::Refused(404, "not found: try /metrics"), head_only),
    }
}

/// Writes `bytes` in pieces, each within what is left before `deadline`.
fn write_before(stream: &mut impl Conn, bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    for chunk in bytes.chunks(CHUNK) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.tcp().set_write_timeout(Some(left))?;
        stream.write_all(chunk)?;
    }
    stream.flush()
}

/// A status's reason phrase.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    }
}

/// The `/` page: what is counted, what did not open.
fn index(exporter: &super::counting::Exporter) -> Vec<u8> {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut page = String::from(
        "<!DOCTYPE html>\n<html><head><title>counterhal</title></head><body>\n\
         <h1>counterhal serve</h1>\n<p><a href=\"/metrics\">Metrics</a></p>\n",
    );
    page.push_str(&format!(
        "<p>Version {}, backend {}; {} places counted.</p>\n<h2>Events</h2>\n<ul>\n",
        env!("CARGO_PKG_VERSION"),
        exporter.backend_name(),
        exporter.places.len()
    ));
    for event in &exporter.events {
        page.push_str(&format!(
            "<li>{} ({})</li>\n",
            escape(&event.name),
            escape(&event.pmu)
        ));
    }
    page.push_str("</ul>\n");
    if let Some(cgroups) = &exporter.cgroups {
        page.push_str(&format!(
            "<h2>Cgroups</h2>\n<p>Counted in the mode {}.</p>\n",
            escape(&cgroups.mode_said())
        ));
    }
    if !exporter.refused.is_empty() {
        page.push_str("<h2>Not opened here</h2>\n<ul>\n");
        for refused in &exporter.refused {
            page.push_str(&format!(
                "<li><code>{}</code>: {}</li>\n",
                escape(&refused.name),
                escape(&refused.message)
            ));
        }
        page.push_str("</ul>\n");
    }
    if exporter.unopened > 0 {
        let reason = exporter.budget.reason(exporter.unopened);
        page.push_str(&format!(
            "<h2>Not counted</h2>\n<p>{}</p>\n",
            escape(&reason)
        ));
    }
    page.push_str("</body></html>\n");
    page.into_bytes()
}
