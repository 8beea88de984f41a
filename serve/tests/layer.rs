//! The layer around a handler: what it refuses before the handler sees a request, and what
//! it adds to every answer.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use base64::Engine as _;
use counterhal_serve::http::{Handler, Header, Layer, Request, Response, WebConfigFile};

/// A handler that answers every request 200 with its path a hundred times over (compressible
/// except for `/page`), and counts the requests it is handed; `/-/ready` is public.
struct Echo(Arc<AtomicUsize>);

impl Handler for Echo {
    fn handle(&self, request: &Request<'_>) -> Response {
        self.0.fetch_add(1, SeqCst);
        let body = request.path().repeat(100).into_bytes();
        let mut answer = Response::new(200, "text/plain; charset=utf-8", body);
        answer.compressible = request.path() != "/page";
        answer
    }

    fn public(&self, path: &str) -> bool {
        path == "/-/ready"
    }
}

/// A layer around [`Echo`] with the web configuration `yaml` (none where `None`), and the
/// count of requests its handler was handed.
fn echo(yaml: Option<&str>) -> (Layer, Arc<AtomicUsize>, Option<PathBuf>) {
    let handed = Arc::new(AtomicUsize::new(0));
    let file = yaml.map(|yaml| {
        let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-serve-layer-{}-{}",
            std::process::id(),
            next_number()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("web.yml");
        std::fs::write(&path, yaml).unwrap();
        path
    });
    let web = file
        .as_deref()
        .map(|path| WebConfigFile::open(path).unwrap());
    (Layer::new(Echo(Arc::clone(&handed)), web), handed, file)
}

/// A number of its own for each layer made (their files' folders).
fn next_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, SeqCst)
}

/// A request of `method` for `target` with `headers`.
fn request<'a>(method: &'a str, target: &'a str, headers: &'a [Header<'a>]) -> Request<'a> {
    Request {
        method,
        target,
        headers,
    }
}

/// A web configuration of the user `prometheus` (password `scrape-me`), a rate limit of
/// `burst` requests and no more for an hour, and a header for every answer.
fn guarded(burst: u32) -> String {
    let hash = bcrypt::hash("scrape-me", 4).unwrap();
    format!(
        "basic_auth_users:\n  prometheus: {hash}\nrate_limit:\n  interval: 1h\n  burst: {burst}\n\
         http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
    )
}

/// A header line.
fn header<'a>(name: &'a str, value: &'a str) -> Header<'a> {
    Header {
        name,
        value: value.as_bytes(),
    }
}

/// Methods but `GET` and `HEAD` are refused (405, with `Allow`), and so is a request that
/// announces a body (413), before the handler is handed them.
///
/// Oracle: RFC 9110 (15.5.6: a 405 "MUST generate an Allow header field"; 9.3.1 and 9.3.2:
/// `GET` and `HEAD` are safe, and a body on them has no defined meaning).
#[test]
fn only_get_and_head_without_a_body_reach_the_handler() {
    let (layer, handed, _) = echo(None);
    let none = Header {
        name: "Content-Length",
        value: b"0",
    };
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let answer = layer.answer(&request(method, "/metrics", &[none]), None);
        assert_eq!(answer.status, 405, "{method}");
        assert_eq!(answer.header("Allow"), Some("GET, HEAD"), "{method}");
    }
    for body in [
        header("Content-Length", "5"),
        header("Transfer-Encoding", "chunked"),
    ] {
        let answer = layer.answer(&request("GET", "/metrics", &[body]), None);
        assert_eq!(answer.status, 413, "{}", body.name);
    }
    assert_eq!(
        handed.load(SeqCst),
        0,
        "the handler was handed a refused request"
    );
    for method in ["GET", "HEAD"] {
        let answer = layer.answer(&request(method, "/metrics", &[none]), None);
        assert_eq!(answer.status, 200, "{method}");
        assert_eq!(answer.header("Cache-Control"), Some("no-store"));
    }
    assert_eq!(handed.load(SeqCst), 2);
}

/// With `basic_auth_users`, a request without the credentials is answered 401 with
/// `WWW-Authenticate: Basic` and never handed on; with `rate_limit`, one past the burst 429,
/// before any password is checked; the configured headers are on every answer, refusals
/// included.
///
/// Oracle: exporter-toolkit's web/handler.go (`WWW-Authenticate: Basic` and 401 on bad
/// credentials; the configured headers set before the handler runs) and its
/// docs/web-configuration.md (`rate_limit`'s `interval` and `burst`); the hash is the
/// `bcrypt` crate's, which the toolkit's Go bcrypt verifies.
#[test]
fn users_rate_limit_and_headers_are_the_web_configurations() {
    let (layer, handed, file) = echo(Some(&guarded(4)));
    let config = layer.current();
    let basic = |credentials: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        format!("Basic {encoded}")
    };
    let (right, wrong) = (basic("prometheus:scrape-me"), basic("prometheus:guess"));
    let mut statuses = Vec::new();
    for authorization in [None, Some(&wrong), Some(&right), Some(&right), Some(&right)] {
        let headers: Vec<Header<'_>> = authorization
            .map(|value| header("Authorization", value))
            .into_iter()
            .collect();
        let answer = layer.answer(&request("GET", "/metrics", &headers), config.as_deref());
        assert_eq!(answer.header("X-Frame-Options"), Some("deny"), "{answer:?}");
        assert_eq!(
            answer.header("Cache-Control"),
            Some("no-store"),
            "{answer:?}"
        );
        if answer.status == 401 {
            assert_eq!(answer.header("WWW-Authenticate"), Some("Basic"));
        }
        statuses.push(answer.status);
    }
    // The burst of 4 spent, the fifth is over the rate limit, right credentials or not.
    assert_eq!(statuses, [401, 401, 200, 200, 429]);
    assert_eq!(
        handed.load(SeqCst),
        2,
        "only the admitted requests are handed on"
    );
    let refused = layer.refuse(431, "too many header lines", config.as_deref());
    assert_eq!(refused.header("X-Frame-Options"), Some("deny"));
    if let Some(dir) = file.as_deref().and_then(|f| f.parent()) {
        std::fs::remove_dir_all(dir).ok();
    }
}

/// A path the handler calls public (a probe's) is answered without credentials and past the
/// rate limit, with the configured headers, while every other path still needs both; its
/// method and body are refused as any request's.
///
/// Oracle: the Kubernetes probe (an `httpGet` sends no `Authorization`) and Prometheus'
/// `/-/ready`, which a probe asks for.
#[test]
fn a_public_path_needs_no_credentials_and_no_rate() {
    let (layer, handed, file) = echo(Some(&guarded(2)));
    let config = layer.current();
    let statuses: Vec<u16> = ["/metrics", "/-/ready", "/metrics", "/-/ready", "/metrics"]
        .iter()
        .map(|path| {
            let answer = layer.answer(&request("GET", path, &[]), config.as_deref());
            assert_eq!(answer.header("X-Frame-Options"), Some("deny"), "{path}");
            answer.status
        })
        .collect();
    // The burst of 2 is spent by /metrics alone; /-/ready takes none of it.
    assert_eq!(statuses, [401, 200, 401, 200, 429]);
    assert_eq!(handed.load(SeqCst), 2, "the two probes alone are handed on");
    let posted = layer.answer(&request("POST", "/-/ready", &[]), config.as_deref());
    assert_eq!(posted.status, 405);
    if let Some(dir) = file.as_deref().and_then(|f| f.parent()) {
        std::fs::remove_dir_all(dir).ok();
    }
}

/// An answer that may be compressed is gzipped for a client that names gzip above identity,
/// and decodes to the plain answer; one that may not, or a client that does not ask, gets
/// it plain.
///
/// Oracle: client_golang's promhttp (gddo's `NegotiateContentEncoding` over identity and
/// gzip, RFC 9110's q=0 for "not acceptable"); flate2's decoder for the body.
#[test]
fn gzip_is_negotiated_where_the_answer_may_be_compressed() {
    let (layer, _, _) = echo(None);
    let plain = layer.answer(&request("GET", "/metrics", &[]), None);
    assert_eq!(plain.header("Content-Encoding"), None);
    let gzip = [header("Accept-Encoding", "deflate, gzip")];
    let zipped = layer.answer(&request("GET", "/metrics", &gzip), None);
    assert_eq!(zipped.header("Content-Encoding"), Some("gzip"));
    assert!(zipped.body.len() < plain.body.len(), "{zipped:?}");
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&zipped.body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, plain.body);
    let refused = [header("Accept-Encoding", "gzip;q=0")];
    let answer = layer.answer(&request("GET", "/metrics", &refused), None);
    assert_eq!(answer.header("Content-Encoding"), None);
    let page = layer.answer(&request("GET", "/page", &gzip), None);
    assert_eq!(page.header("Content-Encoding"), None);
}
