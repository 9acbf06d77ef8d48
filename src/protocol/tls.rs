//! TLS for every protocol: `rustls` on the `ring` provider, PEM files read with
//! `rustls-pki-types`, the system roots by default. A [`Connector`] is made once per client
//! (when the client is built, with the ALPN its protocol needs) and shared by all its
//! connections; handshakes happen when a connection opens, never per request.
//!
//! Failures are named by their cause (unknown CA, name mismatch, expiry, a client certificate
//! the server wants, a plaintext server on an `https://` URL and the reverse), because
//! "handshake failed" tells a user nothing about what to fix.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::CallError;

/// What the user said about TLS (`--cacert`, `--cert`/`--key`, `-k`, `--servername`, or the
/// same keys in a plan). Paths are already resolved (placeholders filled in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Trust these roots instead of the system's.
    pub cacert: Option<PathBuf>,
    /// Client certificate chain and its key (mutual TLS).
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Do not verify the server's certificate.
    pub insecure: bool,
    /// The name sent as SNI and verified, instead of the URL's host.
    pub servername: Option<String>,
}

impl TlsOptions {
    /// Whether any option was given (for refusing them on plaintext URLs).
    pub fn is_set(&self) -> bool {
        *self != TlsOptions::default()
    }

    /// A connector for `host` (the URL's host) offering `alpn`. Reads every file now, so a
    /// missing or malformed one is an error before anything is sent.
    pub fn connector(&self, host: &str, alpn: &[&[u8]]) -> Result<Arc<Connector>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        } else {
            let roots = Arc::new(self.roots()?);
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                roots,
                provider.clone(),
            )
            .build()
            .map_err(|e| format!("TLS: {e}"))?;
            let given = match &self.cacert {
                Some(path) => read_certs(path, "--cacert")?,
                None => Vec::new(),
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnchorOrLeaf { inner, given }))
        };
        let mut config = match (&self.cert, &self.key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert, "--cert")?;
                let bytes = read_pem(key, "--key")?;
                let key = PrivateKeyDer::from_pem_slice(&bytes)
                    .map_err(|e| format!("--key `{}`: {}", key.display(), pem_error(e)))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("--cert/--key: {}", key_error(&e)))?
            }
            (Some(_), None) => {
                return Err("--cert needs --key (the client certificate's key)".into())
            }
            (None, Some(_)) => return Err("--key needs --cert (the client certificate)".into()),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let shown = self.servername.clone().unwrap_or_else(|| {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string()
        });
        let name = ServerName::try_from(shown.clone())
            .map_err(|_| format!("`{shown}` is not a server name TLS can verify (--servername)"))?;
        Ok(Arc::new(Connector {
            config: Arc::new(config),
            name,
            shown,
            has_cert: self.cert.is_some(),
            negotiated: OnceLock::new(),
        }))
    }

    fn roots(&self) -> Result<rustls::RootCertStore, String> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.cacert {
            Some(path) => {
                for cert in read_certs(path, "--cacert")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("--cacert `{}`: {e}", path.display()))?;
                }
            }
            None => {
                let (added, _) = roots.add_parsable_certificates(system_roots().iter().cloned());
                if added == 0 {
                    return Err(
                        "TLS: no system root certificates found; pass --cacert FILE (or -k)".into(),
                    );
                }
            }
        }
        Ok(roots)
    }
}

fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// The largest PEM file read (a CA bundle is a few hundred KB).
const PEM_LIMIT: u64 = 4 << 20;

/// A PEM file's bytes: a regular file, at most [`PEM_LIMIT`] (`/dev/zero`, `/dev/urandom`
/// or a FIFO are refused at once).
fn read_pem(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    crate::sys::read_bounded_bytes(path, PEM_LIMIT)
        .map_err(|e| format!("{flag} `{}`: cannot read: {e}", path.display()))
}

fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read_pem(path, flag)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} `{}`: {}", path.display(), pem_error(e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} `{}`: no PEM certificate in the file",
            path.display()
        ));
    }
    Ok(certs)
}

fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::Io(e) => format!("cannot read: {e}"),
        E::NoItemsFound => "no PEM item of the right kind".into(),
        E::MissingSectionEnd { end_marker } => format!(
            "not valid PEM: a section never ends (no `{}` line)",
            String::from_utf8_lossy(&end_marker)
        ),
        E::IllegalSectionStart { line } => format!(
            "not valid PEM: a bad `-----BEGIN` line: `{}`",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        ),
        E::Base64Decode(_) => {
            "not valid PEM: a section's body is not base64 (a damaged or truncated file?)".into()
        }
        E::SectionTooLarge => "not valid PEM: a section is larger than 256 MB".into(),
        other => format!("not valid PEM: {other}"),
    }
}

/// Why a client certificate and key do not go together, in words.
fn key_error(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            "the key is not the certificate's (its public half differs): pass the key the \
             certificate was made for"
                .into()
        }
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown) => {
            "cannot tell whether the key is the certificate's".into()
        }
        other => other.to_string(),
    }
}

/// `--insecure`: accepts any certificate, but still checks the handshake's signatures so the
/// connection is a real TLS connection.
/// The `--cacert` certificates as curl trusts them: roots, and — when the server presents one
/// of them itself — its own certificate. The usual one-liner (`openssl req -x509 … -subj
/// /CN=localhost -addext subjectAltName=IP:127.0.0.1`) makes a certificate with CA:TRUE,
/// which WebPKI refuses as an end entity (`CaUsedAsEndEntity`); the exact certificate the
/// user gave is still checked against the server's name.
#[derive(Debug)]
struct AnchorOrLeaf {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for AnchorOrLeaf {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        let ca_as_leaf = matches!(
            &verdict,
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o)))
                if o.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
        );
        if !ca_as_leaf || !self.given.iter().any(|g| g.as_ref() == end_entity.as_ref()) {
            return verdict;
        }
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| rustls::Error::General(format!("the server's certificate: {e}")))?;
        cert.verify_is_valid_for_subject_name(server_name)
            .map_err(|_| {
                rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
            })?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS settings of one client, shared by its connections.
pub struct Connector {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    shown: String,
    has_cert: bool,
    /// What the first handshake negotiated, for the report (`TLSv1.3 TLS13_AES_… h2`).
    negotiated: OnceLock<String>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("name", &self.shown)
            .field("alpn", &self.config.alpn_protocols)
            .finish()
    }
}

impl Connector {
    /// The same settings offering other ALPN protocols.
    pub fn with_alpn(&self, alpn: &[&[u8]]) -> Arc<Connector> {
        let mut config = (*self.config).clone();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(Connector {
            config: Arc::new(config),
            name: self.name.clone(),
            shown: self.shown.clone(),
            has_cert: self.has_cert,
            negotiated: OnceLock::new(),
        })
    }

    /// The version, cipher suite and ALPN protocol of the first handshake, once there was one.
    pub fn negotiated(&self) -> Option<&str> {
        self.negotiated.get().map(String::as_str)
    }

    /// Runs the handshake on `tcp`.
    pub async fn handshake(&self, tcp: TcpStream) -> Result<Stream, CallError> {
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        let tls = connector
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| CallError::Tls(self.explain(&e, true)))?;
        let conn = tls.get_ref().1;
        if self.negotiated.get().is_none() {
            let version = conn
                .protocol_version()
                .map(|v| format!("{v:?}").replace("TLSv1_", "TLSv1."))
                .unwrap_or_default();
            let suite = conn
                .negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite()))
                .unwrap_or_default();
            let alpn = conn
                .alpn_protocol()
                .map(|p| format!(" (ALPN {})", String::from_utf8_lossy(p)))
                .unwrap_or_default();
            let _ = self.negotiated.set(format!("{version} {suite}{alpn}"));
        }
        if !self.config.alpn_protocols.is_empty()
            && self.config.alpn_protocols.iter().any(|p| p == b"h2")
            && !self.config.alpn_protocols.iter().any(|p| p == b"http/1.1")
            && conn.alpn_protocol() != Some(b"h2")
        {
            return Err(CallError::Tls(format!(
                "the server at `{}` did not agree to HTTP/2 over TLS (ALPN h2)",
                self.shown
            )));
        }
        Ok(Stream::Tls(Box::new(tls)))
    }

    fn explain(&self, e: &io::Error, handshake: bool) -> String {
        match rustls_error(e) {
            Some(r) => describe(r, &self.shown, self.has_cert),
            None if handshake && e.kind() == io::ErrorKind::UnexpectedEof => {
                "TLS: the server closed the connection during the handshake (is it a TLS server?)"
                    .into()
            }
            None if handshake => format!("TLS handshake failed: {e}"),
            None => e.to_string(),
        }
    }
}

fn rustls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// Names the cause of a TLS failure and what to pass to fix it.
fn describe(e: &rustls::Error, name: &str, has_cert: bool) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => format!(
                "TLS: the certificate of `{name}` is signed by an unknown CA; \
                 pass the CA with --cacert FILE (or -k to skip verification)"
            ),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                let presented = match c {
                    CertificateError::NotValidForNameContext { presented, .. } => {
                        format!(" (it is valid for: {})", presented.join(", "))
                    }
                    _ => String::new(),
                };
                format!(
                    "TLS: name mismatch: the server's certificate is not valid for `{name}`{presented}; \
                     pass --servername NAME to verify another name"
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("TLS: the certificate of `{name}` has expired")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("TLS: the certificate of `{name}` is not valid yet")
            }
            CertificateError::Revoked => format!("TLS: the certificate of `{name}` is revoked"),
            other => format!("TLS: the certificate of `{name}` was rejected: {other:?}"),
        },
        E::AlertReceived(AlertDescription::CertificateRequired) => {
            "TLS: the server wants a client certificate; pass --cert FILE --key FILE".into()
        }
        E::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::HandshakeFailure,
        ) if !has_cert => {
            "TLS: the server refused the handshake; it probably wants a client certificate \
             (pass --cert FILE --key FILE)"
                .into()
        }
        E::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired),
        ) => format!("TLS: the server rejected the client certificate ({a:?})"),
        E::InvalidMessage(_) => format!(
            "TLS: `{name}` did not answer in TLS; is it a plaintext server? (use an http:// URL)"
        ),
        E::NoApplicationProtocol => {
            "TLS: the server offers none of the ALPN protocols asked for".into()
        }
        other => format!("TLS: {other}"),
    }
}

/// A call's I/O error as a [`CallError`]: a TLS failure by its cause, else as is.
pub(crate) fn call_error(e: io::Error) -> CallError {
    match explain_io(&e) {
        Some(why) => CallError::Tls(why),
        None => CallError::Io(e.to_string()),
    }
}

/// Explains an I/O error from a connection: a TLS alert or failure by its cause, else as is.
pub fn explain_io(e: &io::Error) -> Option<String> {
    if let Some(m) = e.get_ref().and_then(|i| i.downcast_ref::<Mismatch>()) {
        return Some(m.to_string());
    }
    rustls_error(e).map(|r| describe(r, "the server", true))
}

/// What a plaintext client saw in the server's first bytes instead of what it expected.
#[derive(Debug, thiserror::Error)]
enum Mismatch {
    #[error("the server answered in TLS; use an https:// URL")]
    Tls,
    #[error(
        "the server answered in HTTP/1.1, not HTTP/2: it may be a TLS server (use an https:// \
         URL) or not speak HTTP/2 without TLS (leave out --h2 / h2 = true)"
    )]
    NotH2,
}

/// A client connection, plaintext or TLS, so every protocol reads and writes one type.
pub enum Stream {
    /// `checked` turns true after the first bytes read were seen to be neither TLS nor, for
    /// an HTTP/2 client (`h2`), HTTP/1.
    Plain {
        tcp: TcpStream,
        checked: bool,
        h2: bool,
    },
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    pub fn plain(tcp: TcpStream) -> Stream {
        Stream::Plain {
            tcp,
            checked: false,
            h2: false,
        }
    }

    /// Marks a plaintext stream as carrying HTTP/2 with prior knowledge.
    pub fn expect_h2(mut self) -> Stream {
        if let Stream::Plain { h2, .. } = &mut self {
            *h2 = true;
        }
        self
    }
}

/// Whether the first bytes of a plaintext answer are a TLS record (a server alert or
/// handshake) or a server's own "you sent plaintext to a TLS port" reply.
fn looks_like_tls(first: &[u8]) -> bool {
    let record = first.len() >= 2 && matches!(first[0], 0x15 | 0x16) && first[1] == 0x03;
    let said = |needle: &[u8]| first.windows(needle.len()).any(|w| w == needle);
    record
        || said(b"HTTP request was sent to HTTPS port")
        || said(b"HTTP request to an HTTPS server")
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, checked, h2 } => {
                let before = buf.filled().len();
                let r = Pin::new(tcp).poll_read(cx, buf);
                if !*checked && matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
                    *checked = true;
                    let first = &buf.filled()[before..];
                    let wrong = if looks_like_tls(first) {
                        Some(Mismatch::Tls)
                    } else if *h2 && first.starts_with(b"HTTP/1.") {
                        Some(Mismatch::NotH2)
                    } else {
                        None
                    };
                    if let Some(m) = wrong {
                        return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, m)));
                    }
                }
                r
            }
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain { tcp, .. } => tcp.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { tcp, .. } => Pin::new(tcp).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_clients_see_tls_answers_for_what_they_are() {
        assert!(looks_like_tls(&[0x15, 0x03, 0x03, 0x00, 0x02]));
        assert!(looks_like_tls(&[0x16, 0x03, 0x01]));
        assert!(looks_like_tls(
            b"HTTP/1.1 400 Bad Request\r\n\r\nThe plain HTTP request was sent to HTTPS port"
        ));
        assert!(!looks_like_tls(b"HTTP/1.1 200 OK\r\n"));
        assert!(!looks_like_tls(&[0x00, 0x00, 0x12, 0x04]));
    }

    #[test]
    fn option_mistakes_are_named() {
        let only_cert = TlsOptions {
            cert: Some("c.pem".into()),
            ..TlsOptions::default()
        };
        assert!(only_cert
            .connector("x", &[])
            .unwrap_err()
            .contains("--cert needs --key"));
        let missing = TlsOptions {
            cacert: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        let e = missing.connector("x", &[]).unwrap_err();
        assert!(
            e.contains("--cacert `/nonexistent/ca.pem`: cannot read"),
            "{e}"
        );
        let insecure = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        assert!(insecure.connector("127.0.0.1", &[b"h2"]).is_ok());
    }
}
