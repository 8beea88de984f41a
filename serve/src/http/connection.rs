//! One connection's requests, the transport's part: each head read into a fixed buffer
//! within the header timeout and parsed by `httparse` (no allocation) into a [`Request`],
//! handed to the layer, and its [`Response`] written within the write timeout; the
//! connection kept for the next request where the client keeps it, else closed. A head
//! larger than the buffer is refused (431), a malformed one too (400), a head that does not
//! arrive in time closed (408). With `--web.config.file`'s TLS, a plain request is answered
//! 400 as Go's servers answer it. A `HEAD` is answered with the head alone.

use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::message::{Header, Request, Response, reason};
use super::table::Shared;
use super::tally::Closed;
use super::web::WebConfig;

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
                shared.tally.answered(400);
            }
            stream.shutdown(Shutdown::Both).ok();
            return;
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            shared.tally.closed(Closed::HeaderTimeout);
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

/// A header line before it is filled in.
const EMPTY: Header<'static> = Header {
    name: "",
    value: b"",
};

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

/// Reads one request (the next on a `kept` connection), has the layer answer it, and writes
/// the answer: whether it was answered, and whether the connection is kept for another.
///
/// The write timeout runs from the moment the answer is rendered: it bounds how long the
/// client takes to read it, not how long the handler takes to render it. Go's `net/http`
/// starts its `WriteTimeout` as the request head is read (`(*conn).readRequest` in
/// `net/http/server.go`), so that a handler slower than it sends nothing; node_exporter hands
/// exporter-toolkit's `web.ListenAndServe` an `http.Server{}` with no `WriteTimeout`, and
/// client_golang bounds a slow scrape apart (promhttp's `HandlerOpts.Timeout`). This follows
/// the exporters: a slow scrape is answered late rather than not at all.
fn answer_one(
    stream: &mut impl Conn,
    id: u64,
    shared: &Shared,
    web: Option<&WebConfig>,
    kept: bool,
) -> (bool, bool) {
    let limits = shared.limits;
    let mut buffer = [0u8; MAX_HEAD];
    let begun = || shared.table.begun(id);
    let timeouts = (limits.header_timeout, kept.then_some(KEPT_IDLE));
    let read = read_head(stream, &mut buffer, timeouts, begun);
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut headers = [EMPTY; MAX_HEADERS];
    let (answer, head_only, keep) = match read {
        Ok(Head::Read(filled)) => {
            shared.table.answering(id);
            match request(&buffer[..filled], &mut lines, &mut headers) {
                Some((request, keep)) => {
                    let answer = shared.layer.answer(&request, web);
                    (answer, request.head_only(), keep)
                }
                None => (
                    shared.layer.refuse(400, "malformed request", web),
                    false,
                    false,
                ),
            }
        }
        Ok(Head::Refused(status, why)) => {
            shared.table.answering(id);
            (shared.layer.refuse(status, why, web), false, false)
        }
        Err(Unanswered::Gone) => return (false, false),
        Err(Unanswered::Tls) => {
            shared.tally.closed(Closed::Tls);
            return (false, false);
        }
        Err(Unanswered::Late) => {
            shared.tally.closed(Closed::HeaderTimeout);
            shared.table.answering(id);
            let late = "the request head took too long";
            (shared.layer.refuse(408, late, web), false, false)
        }
    };
    // Rendered: from now on, the client's time to take it.
    let deadline = Instant::now() + limits.write_timeout;
    let status = answer.status;
    let keep = keep && matches!(status, 200 | 404) && !shared.draining.load(Relaxed);
    let head = head(&answer, keep);
    let parts: &[&[u8]] = match head_only {
        true => &[&head],
        false => &[&head, &answer.body],
    };
    let written = write_before(stream, parts, deadline);
    // Counted as answered once the client has taken the answer, else by why it did not.
    match written {
        Ok(()) => {
            shared.tally.answered(status);
            (true, keep)
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            shared.tally.closed(Closed::WriteTimeout);
            (false, false)
        }
        Err(_) => {
            shared.tally.closed(Closed::ClientGone);
            (false, false)
        }
    }
}

/// The head of `answer`: its status line, `Content-Type`, `Content-Length` (the body's, also
/// for a `HEAD`), `Connection: close` where the connection is not `keep`, and its headers.
fn head(answer: &Response, keep: bool) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        answer.status,
        reason(answer.status),
        answer.content_type,
        answer.body.len()
    );
    if !keep {
        head.push_str("Connection: close\r\n");
    }
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
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

/// A request head as [`read_head`] found it.
enum Head {
    /// Complete in the buffer's first bytes, this many.
    Read(usize),
    /// Refused before it was read whole (400, 431), saying why.
    Refused(u16, &'static str),
}

/// Reads the request head into `buffer` within `timeouts`, until it is complete or refused;
/// `begun` is called when its first bytes are read. `timeouts`: the header timeout, and on a
/// kept connection how long it may wait for the next request's first byte (then the header
/// timeout runs from it; a kept connection that waits longer is closed, as it is idle).
fn read_head(
    stream: &mut impl Conn,
    buffer: &mut [u8; MAX_HEAD],
    timeouts: (Duration, Option<Duration>),
    begun: impl Fn(),
) -> Result<Head, Unanswered> {
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
        let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match httparse::Request::new(&mut lines).parse(&buffer[..filled]) {
            Ok(httparse::Status::Complete(_)) => return Ok(Head::Read(filled)),
            Ok(httparse::Status::Partial) if filled == buffer.len() => {
                return Ok(Head::Refused(431, "the request head is too large"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Ok(Head::Refused(431, "too many header lines"));
            }
            Err(_) => return Ok(Head::Refused(400, "malformed request")),
        }
    }
}

/// The request whose complete head `read` holds (as [`read_head`] found it), its header
/// lines in `headers`, and whether the client keeps the connection: HTTP/1.1, no
/// `Connection: close`, and nothing sent after the head.
fn request<'a>(
    read: &'a [u8],
    lines: &'a mut [httparse::Header<'a>; MAX_HEADERS],
    headers: &'a mut [Header<'a>; MAX_HEADERS],
) -> Option<(Request<'a>, bool)> {
    let mut parsed = httparse::Request::new(lines);
    let Ok(httparse::Status::Complete(length)) = parsed.parse(read) else {
        return None;
    };
    let mut count = 0;
    for (slot, line) in headers.iter_mut().zip(parsed.headers.iter()) {
        *slot = Header {
            name: line.name,
            value: line.value,
        };
        count += 1;
    }
    let headers: &'a [Header<'a>] = headers;
    let request = Request {
        method: parsed.method?,
        target: parsed.path?,
        headers: &headers[..count],
    };
    let close = request.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("connection") && h.value.eq_ignore_ascii_case(b"close")
    });
    let keep = parsed.version == Some(1) && length == read.len() && !close;
    Some((request, keep))
}

/// Writes `parts` one after the other, in as few writes as the socket takes them (the head
/// and the body in one `writev` where its buffer has room: each write wakes the client, and
/// each wake of a client on this CPU puts this thread back in the run queue), each within
/// what is left before `deadline`.
fn write_before(stream: &mut impl Conn, parts: &[&[u8]], deadline: Instant) -> std::io::Result<()> {
    // The part being written, and how much of it is.
    let (mut at, mut done) = (0, 0);
    loop {
        while at < parts.len() && done == parts[at].len() {
            (at, done) = (at + 1, 0);
        }
        let Some(part) = parts.get(at) else {
            return stream.flush();
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.tcp().set_write_timeout(Some(left))?;
        let next = parts.get(at + 1).copied().unwrap_or_default();
        let mut written =
            match stream.write_vectored(&[IoSlice::new(&part[done..]), IoSlice::new(next)]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(written) => written,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
        while written > 0 && at < parts.len() {
            let taken = written.min(parts[at].len() - done);
            (done, written) = (done + taken, written - taken);
            if done == parts[at].len() {
                (at, done) = (at + 1, 0);
            }
        }
    }
}
