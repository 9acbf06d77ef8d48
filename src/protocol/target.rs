//! Where load goes: a parsed `http://` or `https://` URL, resolved once, and the connect every
//! protocol shares (TCP_NODELAY on every client socket, then the TLS handshake for `https`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use tokio::net::TcpStream;

use super::tls::{Connector, Stream};
use super::CallError;

/// An HTTP endpoint. The path is kept as text so it can hold templates.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port` as the user wrote it, sent as `Host` / `:authority`.
    pub authority: String,
    pub addr: SocketAddr,
    /// Path and query, starting with `/`.
    pub path: String,
    /// An `https://` URL.
    pub secure: bool,
    /// The TLS settings of the client this endpoint belongs to (set by the client factory
    /// for `https://` URLs, with the ALPN its protocol needs).
    pub tls: Option<Arc<Connector>>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UrlError {
    #[error("`{0}` is not an http:// or https:// URL")]
    Scheme(String),
    #[error("`{0}` has no host")]
    NoHost(String),
    #[error(
        "`{0}` carries credentials; bakeoff does not send them from a URL (it would print \
         them): send `-H 'Authorization: Basic …'` (or `headers` in a plan) instead"
    )]
    Credentials(String),
    #[error("`{0}` is not a valid URL: {1}")]
    Invalid(String, &'static str),
    #[error("`{url}` has a bad port `{port}`")]
    Port { url: String, port: String },
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve { host: String, reason: String },
}

/// A URL's parts, checked but not resolved.
pub struct Url<'a> {
    pub authority: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub path: String,
    pub secure: bool,
}

impl Endpoint {
    /// Parses and resolves `url`. Only the first resolved address is used, so load only ever
    /// goes to the one address the user named.
    pub fn parse(url: &str) -> Result<Endpoint, UrlError> {
        let u = Endpoint::check(url)?;
        let host_for_lookup = u.host.trim_start_matches('[').trim_end_matches(']');
        let addr = (host_for_lookup, u.port)
            .to_socket_addrs()
            .map_err(|e| UrlError::Resolve {
                host: u.host.to_string(),
                reason: e.to_string(),
            })?
            .next()
            .ok_or_else(|| UrlError::Resolve {
                host: u.host.to_string(),
                reason: "no address".to_string(),
            })?;
        Ok(Endpoint {
            authority: u.authority.to_string(),
            addr,
            path: u.path,
            secure: u.secure,
            tls: None,
        })
    }

    /// Checks `url`'s syntax without resolving its host (no I/O): what a plan check does.
    pub fn check(url: &str) -> Result<Url<'_>, UrlError> {
        let (secure, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(UrlError::Scheme(url.to_string())),
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() {
            return Err(UrlError::NoHost(url.to_string()));
        }
        if let Some(at) = authority.rfind('@') {
            // Never repeat the password: `http://user:***@host/…`.
            let user = authority[..at].split(':').next().unwrap_or("");
            let scheme = if secure { "https" } else { "http" };
            let masked = format!("{scheme}://{user}:***@{}{path}", &authority[at + 1..]);
            return Err(UrlError::Credentials(masked));
        }
        if authority.starts_with('[') && !authority.contains(']') {
            return Err(UrlError::Invalid(url.to_string(), "`[` is not closed"));
        }
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(UrlError::Invalid(
                url.to_string(),
                "its path has a space or a control character (write it percent-encoded, e.g. %20)",
            ));
        }
        let (host, port) = split_host_port(authority);
        let port: u16 = match port {
            None if secure => 443,
            None => 80,
            Some(p) => p.parse().map_err(|_| UrlError::Port {
                url: url.to_string(),
                port: p.to_string(),
            })?,
        };
        Ok(Url {
            authority,
            host,
            port,
            path,
            secure,
        })
    }

    /// `url` with any password replaced by `***`, for messages.
    pub fn redact(url: &str) -> String {
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.to_string();
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        match rest[..end].rfind('@') {
            Some(at) => {
                let user = rest[..at].split(':').next().unwrap_or("");
                format!("{scheme}://{user}:***@{}", &rest[at + 1..])
            }
            None => url.to_string(),
        }
    }

    pub fn scheme(&self) -> &'static str {
        if self.secure {
            "https"
        } else {
            "http"
        }
    }

    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme(), self.authority, self.path)
    }

    /// The host part of the authority (what TLS verifies unless told another name).
    pub fn host(&self) -> &str {
        split_host_port(&self.authority).0
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
/// own to what it measures, and runs the TLS handshake on it for an `https://` endpoint.
pub async fn connect(endpoint: &Endpoint) -> Result<Stream, CallError> {
    let addr = endpoint.addr;
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| CallError::Connect {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?;
    tcp.set_nodelay(true).map_err(super::tls::call_error)?;
    match (&endpoint.tls, endpoint.secure) {
        (Some(tls), true) => tls.handshake(tcp).await,
        (None, true) => Err(CallError::Tls(format!(
            "no TLS settings for {} (a client made without the client factory)",
            endpoint.url()
        ))),
        (_, false) => Ok(Stream::plain(tcp)),
    }
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
        let e = Endpoint::parse("https://127.0.0.1/x").unwrap();
        assert!(e.secure);
        assert_eq!(
            (e.addr.port(), e.url().as_str()),
            (443, "https://127.0.0.1/x")
        );
        assert!(matches!(
            Endpoint::parse("ftp://127.0.0.1/"),
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
        let e = Endpoint::parse("http://alice:s3cret@127.0.0.1:8/x").unwrap_err();
        assert!(matches!(e, UrlError::Credentials(_)));
        let text = e.to_string();
        assert!(
            !text.contains("s3cret") && text.contains("alice:***@127.0.0.1:8/x"),
            "{text}"
        );
        assert!(matches!(
            Endpoint::parse("http://[::1"),
            Err(UrlError::Invalid(..))
        ));
        assert!(matches!(
            Endpoint::parse("http://127.0.0.1/a b"),
            Err(UrlError::Invalid(..))
        ));
        assert!(matches!(
            Endpoint::parse("http://127.0.0.1/a\r\nX: y"),
            Err(UrlError::Invalid(..))
        ));
    }
}
