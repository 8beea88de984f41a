//! `counterhal serve --web.config.file`: TLS, basic authentication, response headers and a
//! rate limit from a file in Prometheus' exporter-toolkit format, with clients that are not
//! ours: curl (OpenSSL's TLS) and Prometheus 2.42 and 3.5 (Go's crypto/tls and its
//! basic_auth), each of which scrapes with the right password and fails with a wrong one;
//! node_exporter 1.5 and 1.11 judge the same users' hashes. The certificates are
//! OpenSSL's and the users' hashes glibc's bcrypt (cli/tests/fixtures/tls/make).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use crate::serve_prometheus::Prometheus;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The fixtures' folder.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls")
}

/// The test user's bcrypt hash (users.txt: `prometheus HASH`).
fn hash() -> String {
    let users = std::fs::read_to_string(fixtures().join("users.txt")).unwrap();
    users.split_whitespace().nth(1).unwrap().to_string()
}

/// The test user's hash with its cost (two digits) made `cost`: as well formed, and never
/// computed by these tests past the fixture's own cost.
fn hash_of_cost(cost: &str) -> String {
    let hash = hash();
    format!("{}{cost}{}", &hash[..4], &hash[6..])
}

/// A web configuration file with `text` in a folder of its own (`name`), removed when
/// dropped.
struct WebFile {
    path: PathBuf,
}

impl WebFile {
    fn new(name: &str, text: &str) -> WebFile {
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-web-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("web.yml");
        std::fs::write(&path, text).unwrap();
        WebFile { path }
    }

    /// Writes `text` in its place (a new file renamed over it, as configuration tools do).
    fn replace(&self, text: &str) {
        let next = self.path.with_extension("next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(&next, &self.path).unwrap();
    }

    fn arg(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

impl Drop for WebFile {
    fn drop(&mut self) {
        if let Some(dir) = self.path.parent() {
            std::fs::remove_dir_all(dir).ok();
        }
    }
}

/// The server's TLS keys in a web configuration, and `more` after them.
fn tls_config(more: &str) -> String {
    let dir = fixtures();
    format!(
        "tls_server_config:\n  cert_file: {}\n  key_file: {}\n{more}",
        dir.join("server.crt").display(),
        dir.join("server.key").display()
    )
}

/// curl with `args` on `url`: its exit status, and the head and body it got (`-i`).
fn curl(args: &[&str], url: &str) -> (Option<i32>, String) {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "20"])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

fn curl_installed() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The value of the exporter's own series `series` (name and labels as written) in `text`.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// What a server said of its web configuration.
enum Said {
    /// It serves (the line that says so).
    Serves(String),
    /// It ended without serving (all it said).
    Refused(String),
    /// It did neither in 20 s (what it said meanwhile).
    Silent(String),
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Said::Serves(line) => write!(f, "serves ({line})"),
            Said::Refused(said) => write!(f, "refused: {said}"),
            Said::Silent(said) => write!(f, "said nothing in 20 s but: {said}"),
        }
    }
}

/// Starts `command` (a server, its standard error read line by line), waits for a line
/// holding `serving` or for its end, then ends it.
fn started(mut command: Command, serving: &str) -> Said {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = std::io::BufReader::new(child.stderr.take().expect("its standard error"));
    let (lines, heard) = channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + Duration::from_secs(20);
    let mut said = Vec::new();
    let verdict = loop {
        match heard.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains(serving) => break Said::Serves(line),
            Ok(line) => said.push(line),
            Err(RecvTimeoutError::Disconnected) => break Said::Refused(said.join("\n")),
            Err(RecvTimeoutError::Timeout) => break Said::Silent(said.join("\n")),
        }
    };
    child.kill().ok();
    child.wait().ok();
    verdict
}

/// Each user's hash is judged when the file is read as exporter-toolkit judges it, by its
/// form and cost and never computed (a cost-31 hash is no hang), but for what this server
/// refuses on purpose: costs past htpasswd's 17, whose check no scrape would wait for, and
/// `$2x$`, the mark of hashes made by crypt_blowfish's old bug, which bcrypt libraries check
/// as `$2a$` and so get wrong.
///
/// Oracle: node_exporter 1.5 and 1.11 (exporter-toolkit's validateUsers, at start-up), the
/// same file through each and ours; the hashes are glibc's crypt(3) (the fixture's) and
/// edits of it.
#[test]
fn bcrypt_hashes_are_judged_when_read_as_node_exporter_judges_them() {
    serve_or_skip!();
    for release in Release::ALL {
        eprintln!("== node_exporter of {release:?}");
        hashes_judged_as_node_exporter_of(release);
    }
}

/// The body of the test above for `release`'s node_exporter.
fn hashes_judged_as_node_exporter_of(release: Release) {
    let node_exporter = "prometheus-node-exporter";
    tool_or_skip!(release, node_exporter);
    let hash = hash();
    let cases: [(String, Option<&str>); 10] = [
        (hash.clone(), None),
        (hash_of_cost("17"), None),
        (
            hash_of_cost("18"),
            Some("has bcrypt cost 18: this server takes 4 to 17"),
        ),
        (
            hash_of_cost("31"),
            Some("has bcrypt cost 31: this server takes 4 to 17"),
        ),
        (hash_of_cost("03"), None),
        (hash_of_cost("1x"), None),
        (hash.replacen("$2y$", "$3a$", 1), None),
        (
            hash.replacen("$2y$", "$2x$", 1),
            Some("is not a bcrypt hash: $2a$, $2b$ or $2y$"),
        ),
        (hash[..40].to_string(), None),
        ("plain".to_string(), None),
    ];
    for (hash, on_purpose) in cases {
        let web = WebFile::new("hashes", &format!("basic_auth_users:\n  alice: '{hash}'\n"));
        let mut theirs = release.command(node_exporter);
        theirs.args([
            "--collector.disable-defaults",
            "--web.listen-address=127.0.0.1:0",
        ]);
        theirs.arg(format!("--web.config.file={}", web.arg()));
        // Its "Listening on" comes before the users are judged; "TLS is disabled." after.
        let theirs = started(theirs, "TLS is disabled.");
        let mut ours = Command::new(bin());
        ours.args(["serve", "--listen", "127.0.0.1:0", "-e", "task-clock"]);
        ours.args(["--web.config.file", web.arg()]);
        let ours = started(ours, "://");
        match (&theirs, &ours, on_purpose) {
            (Said::Serves(_), Said::Serves(_), None) => {}
            (Said::Refused(_), Said::Refused(why), None)
            | (Said::Serves(_), Said::Refused(why), Some(_))
                if why.contains("basic_auth_users.alice")
                    && on_purpose.is_none_or(|expected| why.contains(expected)) => {}
            _ => panic!(
                "{hash}: node_exporter of {}: {theirs}; counterhal {ours}",
                release.name()
            ),
        }
    }
}

#[test]
fn tls_and_basic_auth_serve_curl_and_prometheus_and_refuse_the_rest() {
    serve_or_skip!();
    if !curl_installed() {
        skip!(Need::Tools, "curl is not installed (apt-get install curl)");
    }
    let web = WebFile::new(
        "tls",
        &tls_config(&format!(
            "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n\
             basic_auth_users:\n  prometheus: {}\n",
            hash()
        )),
    );
    let exporter = Exporter::start(&["-e", "task-clock", "--web.config.file", web.arg()]);
    let url = format!("https://{}/metrics", exporter.address);
    let ca = fixtures().join("ca.crt");
    let ca = ca.to_str().unwrap();

    // The right user and password over TLS 1.3 and 1.2: the counts, with the header set.
    for version in ["--tlsv1.3", "--tls-max"] {
        let mut args = vec!["--cacert", ca, "-u", "prometheus:scrape-me", version];
        if version == "--tls-max" {
            args.push("1.2");
        }
        let (code, text) = curl(&args, &url);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("X-Content-Type-Options: nosniff"), "{text}");
        assert!(
            text.contains("counterhal_event_seconds_total{event=\"task-clock\""),
            "{text}"
        );
    }
    // No credentials, a wrong password, an unknown user: 401 asking for Basic.
    for user in [None, Some("prometheus:wrong"), Some("nobody:scrape-me")] {
        let mut args = vec!["--cacert", ca];
        if let Some(user) = user {
            args.extend(["-u", user]);
        }
        let (code, text) = curl(&args, &url);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.starts_with("HTTP/1.1 401"), "{user:?}: {text}");
        assert!(text.contains("WWW-Authenticate: Basic"), "{text}");
    }
    // A certificate curl does not trust: the handshake fails on curl's side.
    let (code, text) = curl(&["-u", "prometheus:scrape-me"], &url);
    assert_ne!(code, Some(0), "{text}");
    // Plain HTTP to the TLS port: 400, said as Go's servers say it.
    let (status, body) = get(exporter.address, "/metrics", None);
    assert_eq!(status, Some(400), "{body}");
    assert!(body.contains("HTTP request to an HTTPS server"), "{body}");

    // Prometheus scraping with the right password finds the exporter up, with a wrong one
    // down.
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        prometheus_over_tls(release, &exporter, ca);
    }

    // The exporter counted what it refused.
    let (code, text) = curl(&["--cacert", ca, "-u", "prometheus:scrape-me"], &url);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        value(&text, "counterhal_http_requests_total{code=\"401\"}") >= 3.0,
        "{text}"
    );
    assert!(
        value(&text, "counterhal_http_requests_total{code=\"400\"}") >= 1.0,
        "{text}"
    );
    assert!(
        value(
            &text,
            "counterhal_http_connections_closed_total{reason=\"tls_handshake\"}"
        ) >= 1.0,
        "{text}"
    );
}

/// The probe paths `/-/healthy` and `/-/ready` answer over TLS without credentials, as a
/// Kubernetes `httpGet` probe asks (no `Authorization`, the certificate not verified), and say
/// nothing of what is counted; every other path still asks for the user.
///
/// Oracle: curl (OpenSSL), as the kubelet's probe, with `--insecure` as its HTTPS probe skips
/// verification; Prometheus' own `/-/healthy` and `/-/ready`, whose names these are.
#[test]
fn probes_answer_without_credentials_and_reveal_nothing() {
    serve_or_skip!();
    if !curl_installed() {
        skip!(Need::Tools, "curl is not installed (apt-get install curl)");
    }
    let web = WebFile::new(
        "probes",
        &tls_config(&format!("basic_auth_users:\n  prometheus: {}\n", hash())),
    );
    let exporter = Exporter::start(&["-e", "task-clock", "--web.config.file", web.arg()]);
    for (path, said) in [
        ("/-/healthy", "counterhal serve is Healthy.\n"),
        ("/-/ready", "counterhal serve is Ready.\n"),
    ] {
        let url = format!("https://{}{path}", exporter.address);
        let (code, text) = curl(&["--insecure"], &url);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.starts_with("HTTP/1.1 200"), "{path}: {text}");
        assert!(text.ends_with(said), "{path}: {text}");
        assert!(!text.contains("task-clock"), "{path}: {text}");
    }
    for path in ["/", "/metrics", "/-/other"] {
        let url = format!("https://{}{path}", exporter.address);
        let (code, text) = curl(&["--insecure"], &url);
        assert_eq!(code, Some(0), "{text}");
        assert!(text.starts_with("HTTP/1.1 401"), "{path}: {text}");
    }
}

/// Prometheus of `release` scraping `exporter` over TLS (its CA `ca`) with the right password
/// finds it up, with a wrong one down.
fn prometheus_over_tls(release: Release, exporter: &Exporter, ca: &str) {
    tool_or_skip!(release, "prometheus");
    let job = |name: &str, password: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {ca}\n    \
             basic_auth:\n      username: prometheus\n      password: {password}\n    \
             static_configs:\n      - targets: ['{}']\n",
            exporter.address
        )
    };
    let jobs = job("right", "scrape-me") + &job("wrong", "not-it");
    let prometheus = Prometheus::start_with(release, "web", &jobs, "");
    let start = Instant::now();
    let (right, wrong) = loop {
        let up = |job: &str| {
            prometheus
                .query(&format!("up{{job=\"{job}\"}}"))
                .first()
                .map(|(_, v)| *v)
        };
        // A scrape that timed out on a busy machine leaves `up` 0 until the next one.
        match (up("right"), up("wrong")) {
            (Some(right), Some(wrong)) if right == 1.0 => break (right, wrong),
            (right, wrong) if start.elapsed() >= Duration::from_secs(60) => {
                break (right.unwrap_or(f64::NAN), wrong.unwrap_or(f64::NAN));
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        (right, wrong),
        (1.0, 0.0),
        "up of the right and wrong passwords after 60 s of {}: {}",
        release.name(),
        prometheus.health()
    );
    let counted = prometheus.query("counterhal_event_seconds_total{job=\"right\"}");
    assert!(!counted.is_empty(), "no counts scraped over TLS");
}

#[test]
fn client_certificates_are_required_and_verified() {
    serve_or_skip!();
    if !curl_installed() {
        skip!(Need::Tools, "curl is not installed (apt-get install curl)");
    }
    let dir = fixtures();
    let web = WebFile::new(
        "mtls",
        &tls_config(&format!(
            "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\n  \
             min_version: TLS13\n",
            dir.join("ca.crt").display()
        )),
    );
    let exporter = Exporter::start(&["-e", "task-clock", "--web.config.file", web.arg()]);
    let url = format!("https://{}/metrics", exporter.address);
    let ca = dir.join("ca.crt");
    let ca = ca.to_str().unwrap();
    // Without a certificate: the handshake fails.
    let (code, text) = curl(&["--cacert", ca], &url);
    assert!(!text.contains("HTTP/1.1 200"), "{code:?}: {text}");
    // The server's own certificate is signed by the CA but is no client's (serverAuth
    // only): refused.
    let with_identity = |who: &str, more: &[&str]| {
        let (cert, key) = (
            dir.join(format!("{who}.crt")),
            dir.join(format!("{who}.key")),
        );
        let mut args = vec!["--cacert", ca, "--cert", cert.to_str().unwrap()];
        args.extend(["--key", key.to_str().unwrap()]);
        args.extend(more);
        curl(&args, &url)
    };
    let (_, text) = with_identity("server", &[]);
    assert!(!text.contains("HTTP/1.1 200"), "{text}");
    // TLS 1.2 is below min_version.
    let (_, text) = with_identity("client", &["--tls-max", "1.2"]);
    assert!(!text.contains("HTTP/1.1 200"), "{text}");
    // The client's certificate: served.
    let (code, text) = with_identity("client", &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        value(
            &text,
            "counterhal_http_connections_closed_total{reason=\"tls_handshake\"}"
        ) >= 3.0,
        "{text}"
    );
}

#[test]
fn the_file_is_read_again_when_it_changes() {
    serve_or_skip!();
    if !curl_installed() {
        skip!(Need::Tools, "curl is not installed (apt-get install curl)");
    }
    let web = WebFile::new(
        "reload",
        &format!("basic_auth_users:\n  prometheus: {}\n", hash()),
    );
    let exporter = Exporter::start(&["-e", "task-clock", "--web.config.file", web.arg()]);
    let url = format!("http://{}/metrics", exporter.address);
    let status = |user: Option<&str>| {
        let args: Vec<&str> = user.map_or(Vec::new(), |u| vec!["-u", u]);
        let (_, text) = curl(&args, &url);
        text.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok())
    };
    assert_eq!(status(Some("prometheus:scrape-me")), Some(200));
    assert_eq!(status(None), Some(401));
    // No users now, and at most two requests a minute.
    web.replace("rate_limit:\n  interval: 1m\n  burst: 2\n");
    assert_eq!(status(None), Some(200));
    assert_eq!(status(None), Some(200));
    assert_eq!(status(None), Some(429));
    // A change that does not read keeps what was read before.
    web.replace("rate_limit:\n  interval: often\n");
    assert_eq!(status(None), Some(429));
    // Turning TLS on takes a restart: refused, and the server still speaks HTTP.
    web.replace(&tls_config(""));
    assert_eq!(status(None), Some(429));
}

/// A user whose hash is past the cost bound, added to the file while it serves, is refused
/// and the file read before keeps serving; one at the bound is taken without its hash being
/// computed. Either way the connections that look at the file go on at once: none waits on
/// bcrypt, which runs only for the requests of its own user.
///
/// Oracle: curl, the client; the hashes are glibc's crypt(3) (the fixture's, its cost
/// edited); the bound is htpasswd's (`-C`, 4 to 17).
#[test]
fn a_costly_hash_added_to_the_file_stalls_no_connection() {
    serve_or_skip!();
    if !curl_installed() {
        skip!(Need::Tools, "curl is not installed (apt-get install curl)");
    }
    let users = |more: &str| format!("basic_auth_users:\n  prometheus: {}\n{more}", hash());
    let web = WebFile::new("costly", &users(""));
    let exporter = Exporter::start(&["-e", "task-clock", "--web.config.file", web.arg()]);
    let url = format!("http://{}/metrics", exporter.address);
    let answer = |user: Option<&str>| {
        let args: Vec<&str> = user.map_or(Vec::new(), |u| vec!["-u", u]);
        curl(&args, &url).1
    };
    let status = |text: &str| text.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok());
    let text = answer(Some("prometheus:scrape-me"));
    assert_eq!(status(&text), Some(200), "{text}");
    // Cost 31: refused when read (computing it would take days); the users before stay.
    web.replace(&users(&format!("  slow: {}\n", hash_of_cost("31"))));
    let text = answer(Some("prometheus:scrape-me"));
    assert_eq!(status(&text), Some(200), "after a cost-31 user: {text}");
    let text = answer(Some("slow:scrape-me"));
    assert_eq!(status(&text), Some(401), "the cost-31 user: {text}");
    // Cost 17, the bound: taken (the header says the file was read) and not computed.
    web.replace(&users(&format!(
        "  patient: {}\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n",
        hash_of_cost("17")
    )));
    let text = answer(Some("prometheus:scrape-me"));
    assert_eq!(status(&text), Some(200), "after a cost-17 user: {text}");
    assert!(text.contains("X-Frame-Options: deny"), "{text}");
}

#[test]
fn bad_web_configurations_are_named_before_serving() {
    let dir = fixtures();
    let cases = [
        ("tls_server_confg: {}\n", "`tls_server_confg` is not a key"),
        (
            &tls_config("  min_version: TLS10\n") as &str,
            "speaks TLS 1.2 and 1.3",
        ),
        (
            &tls_config("  client_auth_type: RequireAnyClientCert\n"),
            "does not verify",
        ),
        (
            &tls_config("  client_auth_type: RequireAndVerifyClientCert\n"),
            "needs client_ca_file",
        ),
        (
            &tls_config("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n"),
            "TLS_RSA_WITH_RC4_128_SHA` is not one this server has",
        ),
        (
            "tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n",
            "cannot read nowhere.crt",
        ),
        (
            &format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
                dir.join("server.crt").display(),
                dir.join("client.key").display()
            ),
            "the certificate and key",
        ),
        ("basic_auth_users:\n  alice: secret\n", "not a bcrypt hash"),
    ];
    for (text, expected) in cases {
        let web = WebFile::new("bad", text);
        let out = counterhal(&["serve", "-e", "task-clock", "--web.config.file", web.arg()]);
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected) && stderr(&out).contains("--web.config.file"),
            "{text}: {}",
            stderr(&out)
        );
    }
    let out = counterhal(&["serve", "--web.config.file", "/nonexistent/web.yml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot read it"), "{}", stderr(&out));
}
