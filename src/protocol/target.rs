//! Where load goes: a parsed `http://host:port/path` URL, resolved once, and the TCP connect
//! every protocol shares (TCP_NODELAY on every client socket).

use std::net::{SocketAddr, ToSocketAddrs};

use tokio::net::TcpStream;

use super::CallError;

/// A plaintext HTTP endpoint. The path is kept as text so it can hold templates.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port` as the user wrote it, sent as `Host` / `:authority`.
    pub authority: String,
    pub addr: SocketAddr,
    /// Path and query, starting with `/`.
    pub path: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UrlError {
    #[error(
        "`{0}` is not an http:// URL (https is not supported: bakeoff measures plaintext servers)"
    )]
    Scheme(String),
    #[error("`{0}` has no host")]
    NoHost(String),
    #[error("`{url}` has a bad port `{port}`")]
    Port { url: String, port: String },
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve { host: String, reason: String },
}

impl Endpoint {
    /// Parses and resolves `url`. Only the first resolved address is used, so load only ever
    /// goes to the one address the user named.
    pub fn parse(url: &str) -> Result<Endpoint, UrlError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| UrlError::Scheme(url.to_string()))?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() {
            return Err(UrlError::NoHost(url.to_string()));
        }
        let (host, port) = split_host_port(authority);
        let port: u16 = match port {
            None => 80,
            Some(p) => p.parse().map_err(|_| UrlError::Port {
                url: url.to_string(),
                port: p.to_string(),
            })?,
        };
        let host_for_lookup = host.trim_start_matches('[').trim_end_matches(']');
        let addr = (host_for_lookup, port)
            .to_socket_addrs()
            .map_err(|e| UrlError::Resolve {
                host: host.to_string(),
                reason: e.to_string(),
            })?
            .next()
            .ok_or_else(|| UrlError::Resolve {
                host: host.to_string(),
                reason: "no address".to_string(),
            })?;
        Ok(Endpoint {
            authority: authority.to_string(),
            addr,
            path,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        // [::1]:8080
        match authority.find("]:") {
            Some(i) => (&authority[..=i], Some(&authority[i + 2..])),
            None => (authority, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    }
}

/// Opens a TCP connection with TCP_NODELAY set, so the client never adds Nagle delay of its
/// own to what it measures.
pub async fn connect(addr: SocketAddr) -> Result<TcpStream, CallError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| CallError::Connect {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?;
    stream.set_nodelay(true).map_err(CallError::io)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_host_port_and_path() {
        let e = Endpoint::parse("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(e.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(e.path, "/a/b?c=1");
        let e = Endpoint::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(e.path, "/");
        let e = Endpoint::parse("http://[::1]:7/x").unwrap();
        assert_eq!(e.addr, "[::1]:7".parse().unwrap());
        let e = Endpoint::parse("http://127.0.0.1?q").unwrap();
        assert_eq!((e.addr.port(), e.path.as_str()), (80, "/?q"));
    }

    #[test]
    fn rejects_bad_urls_with_a_reason() {
        assert!(matches!(
            Endpoint::parse("https://127.0.0.1/"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            Endpoint::parse("127.0.0.1:80"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            Endpoint::parse("http://127.0.0.1:99999/"),
            Err(UrlError::Port { .. })
        ));
        assert!(matches!(
            Endpoint::parse("http:///x"),
            Err(UrlError::NoHost(_))
        ));
    }
}
