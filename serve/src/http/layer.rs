//! The layer between the transport and the handler, as exporter-toolkit's `web.ListenAndServe`
//! wraps a handler (its `webHandler`): with `--web.config.file`, the rate limit (429) and the
//! users' credentials (401) first, except on the paths the handler calls public (the
//! probes'); then what this server takes (`GET` and `HEAD`, 405 for the
//! rest; no request body, 413); then the handler; then gzip for a client that asks
//! (`Accept-Encoding`, negotiated as promhttp negotiates it) where the answer may be
//! compressed; and on every answer `Cache-Control: no-store` and the configured headers.

use std::sync::{Arc, Mutex};

use super::gzip::{self, Gzip};
use super::message::{Handler, Request, Response};
use super::web::{Verdict, WebConfig, WebConfigFile};

/// A handler wrapped with the auth, the HTTP errors and the response headers.
pub struct Layer {
    handler: Box<dyn Handler>,
    web: Option<WebConfigFile>,
    /// The compressor of the answers gzipped.
    gzip: Mutex<Gzip>,
}

impl Layer {
    /// `handler` wrapped, with the users, headers and rate limit of `web` where given (its
    /// TLS is the transport's).
    pub fn new(handler: impl Handler + 'static, web: Option<WebConfigFile>) -> Layer {
        Layer {
            handler: Box::new(handler),
            web,
            gzip: Mutex::new(Gzip::new()),
        }
    }

    /// The web configuration file, where one was given.
    pub fn web(&self) -> Option<&WebConfigFile> {
        self.web.as_ref()
    }

    /// The web configuration as the file says now (read again where it changed): what a
    /// connection is served under.
    pub fn current(&self) -> Option<Arc<WebConfig>> {
        self.web.as_ref().map(WebConfigFile::current)
    }

    /// The answer to `request` under `config` (the [`current`](Self::current) configuration
    /// of its connection).
    pub fn answer(&self, request: &Request<'_>, config: Option<&WebConfig>) -> Response {
        let answer = match self.refusal(request, config) {
            Some(refused) => refused,
            None => {
                let mut answer = self.handler.handle(request);
                if answer.compressible
                    && answer.status == 200
                    && gzip::wanted(request.header("accept-encoding"))
                {
                    let mut compressed = Vec::new();
                    let mut gzip = self.gzip.lock().unwrap_or_else(|p| p.into_inner());
                    gzip.compress(&answer.body, &mut compressed);
                    answer.body = compressed;
                    answer
                        .headers
                        .push(("Content-Encoding".into(), "gzip".into()));
                }
                answer
            }
        };
        dressed(answer, config)
    }

    /// The answer to a request the transport refused before it was read whole (400, 408,
    /// 431), saying `why`, with the headers of every answer.
    pub fn refuse(&self, status: u16, why: &str, config: Option<&WebConfig>) -> Response {
        dressed(Response::text(status, why), config)
    }

    /// Why `request` is not handed to the handler, as the answer that says it; `None` where
    /// it is: the rate limit before any bcrypt, then the credentials (neither on a public
    /// path), then the method and the body.
    fn refusal(&self, request: &Request<'_>, config: Option<&WebConfig>) -> Option<Response> {
        let public = self.handler.public(request.path());
        if let (Some(file), Some(config), false) = (&self.web, config, public) {
            match file.admit(config, request.header_bytes("authorization")) {
                Verdict::Allowed => {}
                Verdict::TooMany => return Some(Response::text(429, "over the rate limit")),
                Verdict::Unauthorized => return Some(Response::text(401, "unauthorized")),
            }
        }
        if !matches!(request.method, "GET" | "HEAD") {
            let why = "only GET and HEAD: no endpoint changes anything";
            return Some(Response::text(405, why));
        }
        let announces_body = request.headers.iter().any(|h| {
            (h.name.eq_ignore_ascii_case("content-length")
                && std::str::from_utf8(h.value).map_or(true, |v| v.trim() != "0"))
                || h.name.eq_ignore_ascii_case("transfer-encoding")
        });
        announces_body.then(|| Response::text(413, "a request body is never read"))
    }
}

/// `answer` with the headers every answer has: `Cache-Control: no-store`, `Allow` on a 405,
/// `WWW-Authenticate` on a 401, and those `config` sets.
fn dressed(mut answer: Response, config: Option<&WebConfig>) -> Response {
    let mut headers = vec![("Cache-Control".to_string(), "no-store".to_string())];
    headers.append(&mut answer.headers);
    match answer.status {
        405 => headers.push(("Allow".into(), "GET, HEAD".into())),
        401 => headers.push(("WWW-Authenticate".into(), "Basic".into())),
        _ => {}
    }
    headers.extend(config.map_or(&[][..], |c| &c.headers).iter().cloned());
    answer.headers = headers;
    answer
}
