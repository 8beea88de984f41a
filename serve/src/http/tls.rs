//! `tls_server_config` of `--web.config.file` (exporter-toolkit's format) as rustls' server
//! configuration: the certificate and key, the client certificates' policy and CA, the
//! versions, cipher suites and curves, each refused by name where this server does not do
//! what the file asks.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use yaml_rust2::Yaml;

use super::yaml::{boolean, mapping, string, strings};

/// PEM text given inline or by a file (relative to `base`), never both.
fn pem(
    inline: Option<String>,
    file: Option<String>,
    names: (&str, &str),
    base: &Path,
) -> Result<Option<Vec<u8>>, String> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(format!(
            "tls_server_config has both {} and {}: one of them",
            names.0, names.1
        )),
        (Some(text), None) => Ok(Some(text.into_bytes())),
        (None, Some(file)) => {
            let path = base.join(&file);
            std::fs::read(&path)
                .map(Some)
                .map_err(|e| format!("tls_server_config.{}: cannot read {file}: {e}", names.1))
        }
        (None, None) => Ok(None),
    }
}

/// `tls_server_config`: the server's certificate and key, the client certificates' policy
/// and CA, the versions, cipher suites and curves.
pub fn tls(value: &Yaml, base: &Path) -> Result<Arc<ServerConfig>, String> {
    let fields = TlsFields::read(value)?;
    let (certs, key) = identity(&fields, base)?;
    let mut provider = rustls::crypto::ring::default_provider();
    choose_cipher_suites(&mut provider, &fields)?;
    choose_curves(&mut provider, &fields)?;
    let provider = Arc::new(provider);
    let versions = versions(&fields)?;
    if let Some(sans) = fields.get("client_allowed_sans")
        && !strings(sans, "tls_server_config.client_allowed_sans")?.is_empty()
    {
        return Err(
            "tls_server_config.client_allowed_sans is not supported by this server: \
                    leave it out and give the allowed clients' CA in client_ca_file"
                .to_string(),
        );
    }
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?;
    let builder = client_auth(builder, &fields, base, &provider)?;
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls_server_config: the certificate and key: {e}"))?;
    config.ignore_client_order = match fields.get("prefer_server_cipher_suites") {
        Some(value) => boolean(value, "tls_server_config.prefer_server_cipher_suites")?,
        None => true,
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `tls_server_config`'s fields, by key (each a key of the toolkit's format).
struct TlsFields<'a>(HashMap<String, &'a Yaml>);

impl<'a> TlsFields<'a> {
    /// The mapping's fields; a key the format does not have is refused, naming those it has.
    fn read(value: &'a Yaml) -> Result<Self, String> {
        let mut fields: HashMap<String, &Yaml> = HashMap::new();
        const KEYS: [&str; 13] = [
            "cert",
            "key",
            "client_ca",
            "cert_file",
            "key_file",
            "client_auth_type",
            "client_ca_file",
            "client_allowed_sans",
            "min_version",
            "max_version",
            "cipher_suites",
            "prefer_server_cipher_suites",
            "curve_preferences",
        ];
        for (key, value) in mapping(value, "tls_server_config")? {
            if !KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "`tls_server_config.{key}` is not a key ({})",
                    KEYS.join(", ")
                ));
            }
            fields.insert(key, value);
        }
        Ok(TlsFields(fields))
    }

    /// The field `key`, where the file gives one.
    fn get(&self, key: &str) -> Option<&'a Yaml> {
        self.0.get(key).copied()
    }

    /// The field `key` as text: none where it is absent, null or empty.
    fn text(&self, key: &str) -> Result<Option<String>, String> {
        self.get(key)
            .filter(|v| !matches!(v, Yaml::Null))
            .map(|v| string(v, &format!("tls_server_config.{key}")))
            .transpose()
            .map(|t| t.filter(|t| !t.is_empty()))
    }
}

/// The server's certificate chain and private key, from PEM given inline or in files.
fn identity(
    fields: &TlsFields<'_>,
    base: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let cert = pem(
        fields.text("cert")?,
        fields.text("cert_file")?,
        ("cert", "cert_file"),
        base,
    )?
    .ok_or("tls_server_config needs the server's certificate (cert_file or cert)")?;
    let key = pem(
        fields.text("key")?,
        fields.text("key_file")?,
        ("key", "key_file"),
        base,
    )?
    .ok_or("tls_server_config needs the server's private key (key_file or key)")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls_server_config: the certificate is not PEM: {e}"))?;
    if certs.is_empty() {
        return Err("tls_server_config: the certificate file holds no CERTIFICATE".to_string());
    }
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| format!("tls_server_config: the private key is not PEM: {e}"))?;

    Ok((certs, key))
}

/// `cipher_suites`: the TLS 1.2 suites chosen by their Go names (TLS 1.3's all kept).
fn choose_cipher_suites(
    provider: &mut rustls::crypto::CryptoProvider,
    fields: &TlsFields<'_>,
) -> Result<(), String> {
    if let Some(names) = fields.get("cipher_suites") {
        let names = strings(names, "tls_server_config.cipher_suites")?;
        if !names.is_empty() {
            let known: Vec<String> = provider
                .cipher_suites
                .iter()
                .filter(|s| s.tls13().is_none())
                .map(|s| format!("{:?}", s.suite()))
                .collect();
            for name in &names {
                if !known.contains(name) {
                    return Err(format!(
                        "tls_server_config.cipher_suites: `{name}` is not one this server \
                         has ({})",
                        known.join(", ")
                    ));
                }
            }
            // Like Go, the list chooses among TLS 1.2's suites; TLS 1.3's are all kept.
            let mut chosen: Vec<_> = provider
                .cipher_suites
                .iter()
                .filter(|s| s.tls13().is_some())
                .copied()
                .collect();
            for name in &names {
                chosen.extend(
                    provider
                        .cipher_suites
                        .iter()
                        .filter(|s| format!("{:?}", s.suite()) == *name),
                );
            }
            provider.cipher_suites = chosen;
        }
    }
    Ok(())
}

/// `curve_preferences`: the key exchange groups chosen by their Go names.
fn choose_curves(
    provider: &mut rustls::crypto::CryptoProvider,
    fields: &TlsFields<'_>,
) -> Result<(), String> {
    if let Some(names) = fields.get("curve_preferences") {
        let names = strings(names, "tls_server_config.curve_preferences")?;
        if !names.is_empty() {
            let mut chosen = Vec::new();
            for name in &names {
                let group = match name.as_str() {
                    "X25519" => "X25519",
                    "CurveP256" => "secp256r1",
                    "CurveP384" => "secp384r1",
                    _ => {
                        return Err(format!(
                            "tls_server_config.curve_preferences: `{name}` is not one this \
                             server has (X25519, CurveP256, CurveP384)"
                        ));
                    }
                };
                chosen.extend(
                    provider
                        .kx_groups
                        .iter()
                        .filter(|g| format!("{:?}", g.name()) == group),
                );
            }
            provider.kx_groups = chosen;
        }
    }
    Ok(())
}

/// `min_version` and `max_version`: the versions spoken, of TLS 1.2 and 1.3.
fn versions(fields: &TlsFields<'_>) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    // The versions as 12 and 13, TLS 1.2 and 1.3 (rustls speaks no other).
    let version = |key: &str, default: u8| match fields.text(key)?.as_deref() {
        None => Ok(default),
        Some("TLS12") => Ok(12),
        Some("TLS13") => Ok(13),
        Some(other @ ("TLS10" | "TLS11")) => Err(format!(
            "tls_server_config.{key} is {other}: this server speaks TLS 1.2 and 1.3 \
             (TLS12, TLS13)"
        )),
        Some(other) => Err(format!(
            "tls_server_config.{key} is `{other}`: TLS12 or TLS13"
        )),
    };
    let (min, max) = (version("min_version", 12)?, version("max_version", 13)?);
    let versions: Vec<&'static SupportedProtocolVersion> =
        [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(number, _)| (min..=max).contains(number))
            .map(|(_, version)| version)
            .collect();
    if versions.is_empty() {
        return Err("tls_server_config.min_version is above max_version".to_string());
    }

    Ok(versions)
}

/// `client_auth_type` with its CA (`client_ca_file` or `client_ca`): how clients' certificates
/// are verified, if at all.
fn client_auth(
    builder: rustls::ConfigBuilder<ServerConfig, rustls::WantsVerifier>,
    fields: &TlsFields<'_>,
    base: &Path,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>, String> {
    let client_ca = pem(
        fields.text("client_ca")?,
        fields.text("client_ca_file")?,
        ("client_ca", "client_ca_file"),
        base,
    )?;
    let auth = fields
        .text("client_auth_type")?
        .unwrap_or_else(|| "NoClientCert".to_string());
    let roots = |pem: Option<Vec<u8>>| -> Result<Arc<RootCertStore>, String> {
        let pem = pem.ok_or_else(|| {
            format!("tls_server_config.client_auth_type {auth} needs client_ca_file (or client_ca)")
        })?;
        let mut store = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert =
                cert.map_err(|e| format!("tls_server_config: the client CA is not PEM: {e}"))?;
            store
                .add(cert)
                .map_err(|e| format!("tls_server_config: the client CA: {e}"))?;
        }
        Ok(Arc::new(store))
    };
    let builder = match auth.as_str() {
        "NoClientCert" => builder.with_no_client_auth(),
        "RequireAndVerifyClientCert" | "VerifyClientCertIfGiven" => {
            let verifier = WebPkiClientVerifier::builder_with_provider(
                roots(client_ca)?,
                Arc::clone(provider),
            );
            let verifier = if auth == "VerifyClientCertIfGiven" {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("tls_server_config: the client CA: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        "RequestClientCert" | "RequireAnyClientCert" => {
            return Err(format!(
                "tls_server_config.client_auth_type {auth} takes certificates it does not \
                 verify, which this server does not do: RequireAndVerifyClientCert (or \
                 VerifyClientCertIfGiven) with client_ca_file"
            ));
        }
        other => {
            return Err(format!(
                "tls_server_config.client_auth_type is `{other}`: NoClientCert, \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            ));
        }
    };
    Ok(builder)
}
