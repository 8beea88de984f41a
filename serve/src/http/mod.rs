//! The exporter's HTTP server in three layers, as exporter-toolkit's `web.ListenAndServe`
//! wraps a Go `http.Handler`, apart from what is counted and labelled: it knows no counter,
//! cgroup or label. The transport ([`Server`]: the listener, [`tls`], the bound on
//! connections kept in [`table`], each [`connection`]'s header and write timeouts, and
//! [`listen`], `--listen`'s forms) reads each [`Request`] and writes its [`Response`]
//! ([`message`]); the [`Layer`] (the web configuration's rate limit and users, the methods and
//! bodies taken, [`gzip`] for the scrapers that ask, the response headers), configured by
//! [`web`] (`--web.config.file`: TLS, users, headers and rate limit, in Prometheus'
//! exporter-toolkit's format, read by [`yaml`]) with [`users`] (their bcrypt hashes and the
//! passwords verified); and a [`Handler`] that knows nothing of either (the exporter's is its
//! scrape). Public so that each layer is tested on its own (serve's `tests/`)
//! and another handler or transport can be served the same way.

pub(crate) mod connection;
pub(crate) mod gzip;
pub(crate) mod layer;
pub(crate) mod listen;
pub(crate) mod message;
pub(crate) mod table;
pub(crate) mod tally;
pub(crate) mod tls;
pub(crate) mod transport;
pub(crate) mod users;
pub(crate) mod web;
pub(crate) mod yaml;

pub use layer::Layer;
pub use message::{Handler, Header, Request, Response};
pub use tally::{Closed, STATUSES, Tally};
pub use transport::{Limits, Server};
pub use web::{WebConfig, WebConfigFile};
