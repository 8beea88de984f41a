//! The scrape handler: `/metrics` renders the counts under the exporter's lock, in the format
//! the `Accept` header asks for; `/` a page naming what is counted and what did not open;
//! `/-/healthy` and `/-/ready`, Prometheus' probe paths, a line that says so to anyone (no
//! lock, no event or cgroup named; `/-/ready` answers 503 with why while no counter counts); anything else 404. It knows nothing of connections, users, headers or compression (the
//! transport's and the layer's).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::counting::Exporter;
use super::exposition;
use super::health::Health;
use super::text_format::Format;
use crate::http::message::{Handler, Request, Response};

/// The exporter's routes over its counters.
pub struct Scrape {
    /// The counters, one scrape (or one look of the follower) at a time.
    exporter: Arc<Mutex<Exporter>>,
    /// The exporter's health, exported beside the counts.
    health: Arc<Health>,
    /// The size of the last scrape (the next one's buffer starts at it).
    last_size: AtomicUsize,
}

impl Scrape {
    /// The routes over `exporter`, with its `health`.
    pub fn new(exporter: Arc<Mutex<Exporter>>, health: Arc<Health>) -> Scrape {
        Scrape {
            exporter,
            health,
            last_size: AtomicUsize::new(4096),
        }
    }

    /// The counters, locked.
    fn lock(&self) -> std::sync::MutexGuard<'_, Exporter> {
        self.exporter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Handler for Scrape {
    fn handle(&self, request: &Request<'_>) -> Response {
        match request.path() {
            "/metrics" => {
                let format = Format::negotiate(request.header("accept"));
                let mut body = Vec::with_capacity(self.last_size.load(Relaxed));
                {
                    let mut exporter = self.lock();
                    let start = Instant::now();
                    exporter.read_all(&self.health);
                    exposition::write(&mut body, format, &exporter, &self.health, start);
                }
                self.last_size.store(body.len(), Relaxed);
                let mut answer = Response::new(200, format.content_type(), body);
                answer.compressible = true;
                answer
            }
            "/" => Response::new(200, "text/html; charset=utf-8", index(&self.lock())),
            // It listens only once its events are open and its configuration read, so an
            // answer is both.
            HEALTHY => Response::text(200, "counterhal serve is Healthy."),
            // Ready where a counter counts; else 503 with why (from the health's counts: no
            // lock, so that a probe never waits on a scrape).
            READY => match self.health.not_ready() {
                None => Response::text(200, "counterhal serve is Ready."),
                Some(why) => Response::text(503, &format!("counterhal serve is not Ready: {why}")),
            },
            _ => Response::text(404, "not found: try /metrics"),
        }
    }

    fn public(&self, path: &str) -> bool {
        matches!(path, HEALTHY | READY)
    }
}

/// The liveness probe's path, as Prometheus names its own.
const HEALTHY: &str = "/-/healthy";
/// The readiness probe's path, as Prometheus names its own.
const READY: &str = "/-/ready";

/// The `/` page: what is counted, what did not open.
fn index(exporter: &Exporter) -> Vec<u8> {
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
