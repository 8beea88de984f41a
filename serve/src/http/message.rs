//! What passes between the layers: a [`Request`] read by the transport, a [`Response`] to
//! write back, and the [`Handler`] that makes one from the other (Go's `http.Handler`, which
//! exporter-toolkit wraps with its auth and headers).

/// A request as the transport read it, borrowed from its head.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// Its method (`GET`, `HEAD`, ...).
    pub method: &'a str,
    /// Its target: the path, with the query where one was sent.
    pub target: &'a str,
    /// Its header lines, in the order sent.
    pub headers: &'a [Header<'a>],
}

/// A header line of a request.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// Its name, in the case sent.
    pub name: &'a str,
    /// Its value, as sent (not necessarily UTF-8).
    pub value: &'a [u8],
}

impl<'a> Request<'a> {
    /// The value of the first header `name` (in any case), as sent.
    pub fn header_bytes(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The value of the first header `name` (in any case), where it is UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.header_bytes(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The target's path: without its query or fragment, and in the absolute form
    /// (`http://host:port/metrics`, which RFC 9112 section 3.2.2 says a server must accept)
    /// without its scheme and authority (an empty path is `/`).
    pub fn path(&self) -> &'a str {
        let path = self.target.split(['?', '#']).next().unwrap_or("");
        let Some((scheme, rest)) = path.split_once("://") else {
            return path;
        };
        let is_http = ["http", "https"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(scheme));
        match rest.find('/') {
            _ if !is_http => path,
            Some(slash) => &rest[slash..],
            None => "/",
        }
    }

    /// Whether it is a `HEAD`: answered with a head and no body.
    pub fn head_only(&self) -> bool {
        self.method == "HEAD"
    }
}

/// An answer: its status, content type and body, and the header lines the layers add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// The body (for a `HEAD`, only measured: its length is the `Content-Length`).
    pub body: Vec<u8>,
    /// Whether the body may be gzipped for a client that asks (a scrape may; a page need not).
    pub compressible: bool,
    /// Header lines beside `Content-Type`, `Content-Length` and `Connection`, in order.
    pub headers: Vec<(String, String)>,
}

impl Response {
    /// A `status` answer of `content_type`, with `body`.
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status,
            content_type,
            body,
            compressible: false,
            headers: Vec::new(),
        }
    }

    /// A `status` answer saying `why` in plain text.
    pub fn text(status: u16, why: &str) -> Response {
        let body = format!("{why}\n").into_bytes();
        Response::new(status, "text/plain; charset=utf-8", body)
    }

    /// The value of its header `name` (in any case), where it has one.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What answers a request that the transport read and the layer let through. It knows
/// nothing of connections, deadlines, users or compression.
pub trait Handler: Send + Sync {
    /// The answer to `request`.
    fn handle(&self, request: &Request<'_>) -> Response;

    /// Whether `path` is answered to anyone, past the users and the rate limit of the web
    /// configuration: a probe's path that reveals nothing and costs nothing. None by default.
    fn public(&self, path: &str) -> bool {
        let _ = path;
        false
    }
}

/// A status's reason phrase (RFC 9110's), for the status line.
pub fn reason(status: u16) -> &'static str {
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
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        // RFC 9112 lets it be empty.
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9112, section 3.2: the origin form and the absolute form name the same resource;
    /// a query and a fragment are not the path.
    #[test]
    fn the_absolute_form_names_the_path_the_origin_form_does() {
        let path = |target| {
            Request {
                method: "GET",
                target,
                headers: &[],
            }
            .path()
        };
        for target in [
            "/metrics",
            "/metrics?x=1",
            "http://127.0.0.1:9464/metrics",
            "HTTP://node:9464/metrics?debug=1",
            "https://[::1]:9464/metrics#top",
        ] {
            assert_eq!(path(target), "/metrics", "{target}");
        }
        assert_eq!(path("http://node:9464"), "/");
        assert_eq!(path("ftp://node/metrics"), "ftp://node/metrics");
        assert_eq!(path("*"), "*");
    }
}
