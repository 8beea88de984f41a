//! `--listen`: the forms of node_exporter's `--web.listen-address` (Go's `net.Listen`):
//! `ADDR:PORT` and `[IPv6]:PORT` as they are, `:PORT` for every address (IPv6 and IPv4,
//! dual-stack where the host has IPv6, else every IPv4 address), and `HOST:PORT` with the
//! host name resolved when the exporter starts (its first IPv4 address, else its first, as Go
//! listens on "at most one of the host's IP addresses").

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs};

/// Where to listen, as `--listen` gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// An address and port (a host name already resolved).
    At(SocketAddr),
    /// Every address, on this port (`:PORT`).
    Every(u16),
}

/// The forms taken, for the errors.
const FORMS: &str = "ADDR:PORT, [IPv6]:PORT, HOST:PORT or :PORT";

/// Reads `--listen`'s `text`.
///
/// # Errors
/// No port, a port that is not one, an IPv6 address without brackets, or a host name that
/// does not resolve; each named, with the forms taken.
pub fn parse(text: &str) -> Result<Listen, String> {
    let bad = |why: String| format!("`{text}` is not an address to listen on: {why} ({FORMS})");
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(Listen::At(address));
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(bad("missing port in address".to_string()));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| bad(format!("`{port}` is not a port (0 to 65535)")))?;
    if host.is_empty() {
        return Ok(Listen::Every(port));
    }
    if host.contains(':') || host.starts_with('[') {
        return Err(bad(
            "an IPv6 address goes in brackets: [::1]:PORT".to_string()
        ));
    }
    let addresses: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(format!("the host `{host}` does not resolve: {e}")))?
        .collect();
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or(addresses.first())
        .map(|&a| Listen::At(a))
        .ok_or_else(|| bad(format!("the host `{host}` has no address")))
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::At(address) => write!(f, "{address}"),
            Listen::Every(port) => write!(f, ":{port}"),
        }
    }
}

impl Listen {
    /// A listener there: for every address, `[::]` (which Linux makes dual-stack unless
    /// `net.ipv6.bindv6only` is set) where the host has IPv6, else `0.0.0.0`.
    ///
    /// # Errors
    /// As `bind(2)`: the address is in use, not this host's, or the port is privileged.
    pub fn bind(&self) -> std::io::Result<TcpListener> {
        match *self {
            Listen::At(address) => TcpListener::bind(address),
            Listen::Every(port) => {
                let every6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port);
                TcpListener::bind(every6).or_else(|six| {
                    let every4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port);
                    // Where the host has no IPv6, every IPv4 address; else the first error.
                    TcpListener::bind(every4).map_err(|_| six)
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_node_exporters_listen_address_are_read() {
        let at = |text: &str| parse(text).unwrap();
        assert_eq!(at(":9100"), Listen::Every(9100));
        assert_eq!(at("[::1]:9100"), Listen::At("[::1]:9100".parse().unwrap()));
        assert_eq!(
            at("0.0.0.0:9100"),
            Listen::At("0.0.0.0:9100".parse().unwrap())
        );
        assert!(matches!(at("localhost:9100"), Listen::At(a) if a.ip().is_loopback()));
        for (text, says) in [
            ("nowhere", "missing port in address"),
            (":http", "`http` is not a port"),
            (":65536", "`65536` is not a port"),
            ("::1:9100", "goes in brackets"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
