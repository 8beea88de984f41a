//! `--web.config.file`: TLS, basic authentication, response headers and a rate limit, from a
//! file in the format of Prometheus' exporter-toolkit (docs/web-configuration.md there), so
//! that one file serves node_exporter and counterhal alike. The file is looked at again for
//! each connection and read again when it changed (certificates are picked up at once, as
//! the toolkit does); a change that does not read is reported on standard error and the
//! configuration read before stays. TLS is turned on or off only by a restart.
//!
//! What the toolkit's format has and this server does not do is refused by name when the
//! file is read: client certificates that are requested but not verified
//! (`RequestClientCert`, `RequireAnyClientCert`, insecure by the toolkit's own note),
//! `client_allowed_sans`, TLS 1.0 and 1.1, and the cipher suites and curves rustls lacks.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::ServerConfig;
use yaml_rust2::{Yaml, YamlLoader};

use super::tls::tls;
use super::users::{Users, Verified};
use super::yaml::{boolean, mapping, string};

/// The largest web configuration file read (with its certificates inline).
const MAX_FILE: u64 = 1 << 20;

/// The response headers the toolkit lets a configuration set.
const HEADERS: [&str; 5] = [
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Strict-Transport-Security",
];

/// One reading of the web configuration file.
pub struct WebConfig {
    /// The TLS server configuration, when `tls_server_config` is given.
    pub tls: Option<Arc<ServerConfig>>,
    /// Users and their bcrypt hashes; none: no authentication.
    users: Users,
    /// Headers added to every answer.
    pub headers: Vec<(String, String)>,
    /// The rate limit: at most `burst` requests at once, one more per `interval`.
    rate: Option<(Duration, u32)>,
}

/// Whether a request may be answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Yes.
    Allowed,
    /// No credentials, or wrong ones (401).
    Unauthorized,
    /// Over the rate limit (429).
    TooMany,
}

/// The configuration file, read again when it changes, and what the requests share: the
/// passwords verified (bcrypt is slow by design; users.rs) and the rate limit's bucket.
pub struct WebConfigFile {
    path: PathBuf,
    state: Mutex<State>,
    verified: Verified,
}

/// What the file gave when it was last read.
struct State {
    stamp: Stamp,
    config: Arc<WebConfig>,
    bucket: (f64, Instant),
    /// The readings begun (each change seen starts one) and the latest of them installed:
    /// a reading finished after a later one was installed is dropped.
    begun: u64,
    installed: u64,
}

/// What tells that the file changed: its modification time, size and inode.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len(), meta.ino()))
}

impl WebConfigFile {
    /// Reads `path`.
    ///
    /// # Errors
    /// The file does not read or does not say a configuration this server can serve, with
    /// what was wrong and what would be right.
    pub fn open(path: &Path) -> Result<WebConfigFile, String> {
        let stamp = stamp(path);
        let config = read(path)?;
        let burst = config.rate.map_or(0, |(_, burst)| burst);
        Ok(WebConfigFile {
            path: path.to_path_buf(),
            state: Mutex::new(State {
                stamp,
                config: Arc::new(config),
                bucket: (f64::from(burst), Instant::now()),
                begun: 0,
                installed: 0,
            }),
            verified: Verified::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The configuration now: read again when the file changed since it was last looked at
    /// (outside the lock, so that other connections go on with the configuration before
    /// until it is read); a change that does not read (or turns TLS on or off) is reported
    /// and the one before kept.
    pub fn current(&self) -> Arc<WebConfig> {
        self.look().0
    }

    /// As [`current`](Self::current), and whether the configuration is the file's as it is
    /// now (`false`: the file was refused, said on standard error, and the one before kept).
    fn look(&self) -> (Arc<WebConfig>, bool) {
        let now = stamp(&self.path);
        let reading = {
            let mut state = self.lock();
            if now == state.stamp {
                return (Arc::clone(&state.config), true);
            }
            state.stamp = now;
            state.begun += 1;
            state.begun
        };
        let read = read(&self.path);
        let mut state = self.lock();
        let taken = match read {
            // A later reading was installed: the file as it was then.
            _ if reading < state.installed => true,
            Ok(config) if config.tls.is_some() != state.config.tls.is_some() => {
                let _shown = crate::log::error(
                    "TLS is turned on or off by a restart; the configuration read before stays",
                    &[("file", &self.path.display())],
                );
                false
            }
            Ok(config) => {
                let burst = config.rate.map_or(0, |(_, burst)| burst);
                state.config = Arc::new(config);
                state.installed = reading;
                self.verified.clear();
                state.bucket = (f64::from(burst), Instant::now());
                true
            }
            Err(e) => {
                let _shown = crate::log::error(
                    "the web configuration was refused; the configuration read before stays",
                    &[("err", &e)],
                );
                false
            }
        };
        (Arc::clone(&state.config), taken)
    }

    /// Reads the file again now, changed or not (`SIGHUP`), as [`current`](Self::current)
    /// reads it when it changed: whether it was taken (`false`: refused, said on standard
    /// error, the configuration before kept).
    pub fn reload(&self) -> bool {
        // A stamp no file has: the next look reads the file.
        self.lock().stamp = Some((SystemTime::UNIX_EPOCH, u64::MAX, u64::MAX));
        self.look().1
    }

    /// Whether a request with `authorization` (its `Authorization` header) may be answered
    /// under `config`: the rate limit first (before any bcrypt), then the credentials.
    pub fn admit(&self, config: &WebConfig, authorization: Option<&[u8]>) -> Verdict {
        if let Some((interval, burst)) = config.rate {
            let mut state = self.lock();
            let (tokens, last) = state.bucket;
            let now = Instant::now();
            let refill = now.duration_since(last).as_secs_f64() / interval.as_secs_f64();
            let tokens = (tokens + refill).min(f64::from(burst));
            if tokens < 1.0 {
                state.bucket = (tokens, now);
                return Verdict::TooMany;
            }
            state.bucket = (tokens - 1.0, now);
        }
        if config.users.is_empty() || self.verified.admits(&config.users, authorization) {
            Verdict::Allowed
        } else {
            Verdict::Unauthorized
        }
    }
}

/// The longest duration Prometheus takes, in milliseconds: its `model.Duration` is a Go
/// `time.Duration`, nanoseconds in an `int64` (292y171d23h47m16s854ms).
pub const MAX_DURATION_MS: u64 = (i64::MAX as u64) / 1_000_000;

/// A Prometheus duration as `model.ParseDuration` reads it (`100ms`, `30s`, `1h30m`): digits
/// and a unit, the units y, w, d, h, m, s, ms each at most once and largest first, or `0`,
/// at most [`MAX_DURATION_MS`].
///
/// # Errors
/// The text is no such duration, or a longer one, with an example of one.
pub fn duration(text: &str) -> Result<Duration, String> {
    const UNITS: [(&str, u64); 7] = [
        ("y", 31_536_000_000),
        ("w", 604_800_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let bad = || {
        format!(
            "`{text}` is not a Prometheus duration (digits and a unit, the units y, w, d, h, m, \
             s, ms each at most once and largest first: e.g. 30s, 1m, 1h30m)"
        )
    };
    if text.is_empty() {
        return Err("an empty duration (e.g. 1m)".to_string());
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let (mut rest, mut next_unit, mut total) = (text, 0, 0u64);
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        // "ms" before "m": the longest unit that follows the digits, no earlier than allowed.
        let (at, (unit, ms)) = UNITS
            .iter()
            .enumerate()
            .skip(next_unit)
            .filter(|(_, (u, _))| rest[digits..].starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())
            .ok_or_else(bad)?;
        if digits == 0
            || !matches!(
                rest[digits + unit.len()..].bytes().next(),
                None | Some(b'0'..=b'9')
            )
        {
            return Err(bad());
        }
        let too_long =
            || format!("`{text}` is longer than Prometheus' longest duration, {LONGEST}");
        let count: u64 = rest[..digits].parse().map_err(|_| too_long())?;
        total = count
            .checked_mul(*ms)
            .and_then(|part| total.checked_add(part))
            .filter(|&total| total <= MAX_DURATION_MS)
            .ok_or_else(too_long)?;
        (rest, next_unit) = (&rest[digits + unit.len()..], at + 1);
    }
    Ok(Duration::from_millis(total))
}

/// [`MAX_DURATION_MS`] as Prometheus writes it.
pub const LONGEST: &str = "292y171d23h47m16s854ms";

/// Reads and checks the configuration file at `path`.
fn read(path: &Path) -> Result<WebConfig, String> {
    let name = path.display();
    let fail = |what: String| format!("--web.config.file {name}: {what}");
    let size = std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read it: {e}")))?
        .len();
    if size > MAX_FILE {
        return Err(fail(format!(
            "it is {size} bytes, more than a web configuration's {MAX_FILE}"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).map_err(fail)
}

/// The configuration `text` says, its file names relative to `base` (the file's folder, as
/// the toolkit takes them).
///
/// # Errors
/// What was wrong, by its key, and what would be right.
pub fn parse(text: &str, base: &Path) -> Result<WebConfig, String> {
    let documents = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let mut config = WebConfig {
        tls: None,
        users: Users::default(),
        headers: Vec::new(),
        rate: None,
    };
    let top = match documents.first() {
        None | Some(Yaml::Null) => return Ok(config),
        Some(top) => mapping(top, "the file")?,
    };
    for (key, value) in top {
        match key.as_str() {
            "tls_server_config" => config.tls = Some(tls(value, base)?),
            "http_server_config" => config.headers = http(value)?,
            "basic_auth_users" => {
                for (user, hash) in mapping(value, "basic_auth_users")? {
                    let hash = string(hash, &format!("basic_auth_users.{user}"))?;
                    config.users.add(user, hash)?;
                }
            }
            "rate_limit" => config.rate = rate(value)?,
            other => {
                return Err(format!(
                    "`{other}` is not a key of a web configuration (tls_server_config, \
                     http_server_config, basic_auth_users, rate_limit)"
                ));
            }
        }
    }
    Ok(config)
}

/// `http_server_config`: `http2` (taken; this server answers HTTP/1.1, which HTTP/2 clients
/// fall back to by ALPN) and the headers the toolkit allows, with its checks of their values.
fn http(value: &Yaml) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (key, value) in mapping(value, "http_server_config")? {
        match key.as_str() {
            "http2" => {
                boolean(value, "http_server_config.http2")?;
            }
            "headers" => {
                for (name, value) in mapping(value, "http_server_config.headers")? {
                    let what = format!("http_server_config.headers.{name}");
                    let Some(known) = HEADERS.iter().find(|h| h.eq_ignore_ascii_case(&name)) else {
                        return Err(format!(
                            "{what}: a header the configuration cannot set ({})",
                            HEADERS.join(", ")
                        ));
                    };
                    let value = string(value, &what)?;
                    let allowed: &[&str] = match *known {
                        "X-Frame-Options" => &["deny", "sameorigin"],
                        "X-Content-Type-Options" => &["nosniff"],
                        _ => &[],
                    };
                    if !value.is_empty()
                        && !allowed.is_empty()
                        && !allowed.iter().any(|a| a.eq_ignore_ascii_case(&value))
                    {
                        return Err(format!("{what} is `{value}`: {}", allowed.join(" or ")));
                    }
                    if value.chars().any(char::is_control) {
                        return Err(format!("{what} has a control character"));
                    }
                    if !value.is_empty() {
                        headers.push(((*known).to_string(), value));
                    }
                }
            }
            other => {
                return Err(format!(
                    "`http_server_config.{other}` is not a key (http2, headers)"
                ));
            }
        }
    }
    Ok(headers)
}

/// `rate_limit`: `interval` (a duration; 0 turns it off) and `burst`.
fn rate(value: &Yaml) -> Result<Option<(Duration, u32)>, String> {
    let mut interval = Duration::ZERO;
    let mut burst = 0u32;
    for (key, value) in mapping(value, "rate_limit")? {
        match key.as_str() {
            "interval" => {
                interval = duration(&string(value, "rate_limit.interval")?)
                    .map_err(|e| format!("rate_limit.interval: {e}"))?
            }
            "burst" => {
                burst = match value {
                    Yaml::Integer(n) => u32::try_from(*n).ok(),
                    _ => None,
                }
                .ok_or("rate_limit.burst is not a count of requests (0 or more)")?;
            }
            other => {
                return Err(format!(
                    "`rate_limit.{other}` is not a key (interval, burst)"
                ));
            }
        }
    }
    if interval.is_zero() {
        return Ok(None);
    }
    if burst == 0 {
        return Err(
            "rate_limit.burst is 0 with an interval: no request would be answered \
                    (1 or more)"
                .to_string(),
        );
    }
    Ok(Some((interval, burst)))
}

/// The provider the TLS configurations are built with (for the tests).
#[cfg(test)]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_prometheus_durations() {
        assert_eq!(duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("1m30ms"), Ok(Duration::from_millis(60_030)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert_eq!(
            duration(LONGEST),
            Ok(Duration::from_millis(MAX_DURATION_MS))
        );
        assert!(duration("1.5s").unwrap_err().contains("e.g. 30s"));
        for bad in ["s", "", "20s4h", "1m1m", "1hx", "1m5", "1mm", "-1s", "1 s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        for long in ["293y", "292y171d23h47m16s855ms", "99999999999999999999s"] {
            assert!(duration(long).unwrap_err().contains(LONGEST), "{long}");
        }
    }

    #[test]
    fn an_empty_file_is_no_configuration() {
        let config = parse("", Path::new(".")).unwrap();
        assert!(config.tls.is_none() && config.users.is_empty() && config.rate.is_none());
    }

    #[test]
    fn bad_keys_and_values_are_named() {
        let cases = [
            ("tls_server_confg: {}", "`tls_server_confg` is not a key"),
            (
                "basic_auth_users: {alice: plain}",
                "basic_auth_users.alice is not a bcrypt hash",
            ),
            (
                "http_server_config: {headers: {X-Frame-Options: allow}}",
                "deny or sameorigin",
            ),
            ("http_server_config: {headers: {Server: me}}", "cannot set"),
            (
                "http_server_config: {http3: true}",
                "http_server_config.http3",
            ),
            ("rate_limit: {interval: 1s, burst: 0}", "burst is 0"),
            (
                "rate_limit: {interval: fast, burst: 1}",
                "rate_limit.interval",
            ),
            (
                "tls_server_config: {key_file: k}",
                "needs the server's certificate",
            ),
            ("[1, 2]", "not a mapping"),
            ("a: [", "not YAML"),
        ];
        for (text, expected) in cases {
            let error = parse(text, Path::new(".")).err().unwrap_or_default();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    /// A password rotated while a request's bcrypt check of the old one runs is not let in
    /// afterwards: the check's success is remembered with the hash it was made against, so
    /// the reload that cleared the cache before it landed cannot be undone by it. Oracle:
    /// exporter-toolkit's web/handler.go, whose cache is keyed by user, hash and password.
    #[test]
    fn a_password_checked_while_the_file_changes_is_not_taken_for_the_new_hash() {
        use base64::Engine as _;
        let dir =
            std::env::temp_dir().join(format!("counterhal-web-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("web.yml");
        let users = |password: &str| {
            let hash = bcrypt::hash(password, 4).unwrap();
            format!("basic_auth_users:\n  prometheus: {hash}\n")
        };
        let basic = |password: &str| {
            let credentials = format!("prometheus:{password}");
            let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
            format!("Basic {encoded}")
        };
        std::fs::write(&path, users("old")).unwrap();
        let file = WebConfigFile::open(&path).unwrap();
        let before = file.current();
        let admitted =
            file.verified
                .admits_with(&before.users, Some(basic("old").as_bytes()), || {
                    let next = path.with_extension("next");
                    std::fs::write(&next, users("new")).unwrap();
                    std::fs::rename(&next, &path).unwrap();
                    assert!(
                        !Arc::ptr_eq(&file.current(), &before),
                        "the rotated file was not read again"
                    );
                });
        let after = file.current();
        let old = file.admit(&after, Some(basic("old").as_bytes()));
        let new = file.admit(&after, Some(basic("new").as_bytes()));
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            admitted,
            "the old password under the configuration it came with"
        );
        assert_eq!(
            (old, new),
            (Verdict::Unauthorized, Verdict::Allowed),
            "the old and the new password after the rotation"
        );
    }

    #[test]
    fn the_go_names_of_suites_are_rustls_names() {
        // The names Go's crypto/tls gives TLS 1.2's AEAD suites, as rustls prints them.
        let names: Vec<String> = provider()
            .cipher_suites
            .iter()
            .filter(|s| s.tls13().is_none())
            .map(|s| format!("{:?}", s.suite()))
            .collect();
        for go in [
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        ] {
            assert!(names.iter().any(|n| n == go), "{go} not in {names:?}");
        }
    }
}
