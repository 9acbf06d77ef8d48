//! HTTP/2 over cleartext (prior knowledge, "h2c"), one connection per client and one stream
//! at a time on it, using the `h2` crate. gRPC rides on the same exchange.

use bytes::Bytes;
use h2::client::SendRequest;
use h2::RecvStream;

use super::http1::Http1Request;
use super::target::{connect, Endpoint};
use super::{CallError, Class, Protocol, Reply};

pub struct H2Conn {
    send: SendRequest<Bytes>,
}

/// Opens an h2c connection and drives it on the current runtime.
pub async fn open(endpoint: &Endpoint) -> Result<H2Conn, CallError> {
    let tcp = connect(endpoint.addr).await?;
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(|e| CallError::Protocol(format!("HTTP/2 handshake failed: {e}")))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(H2Conn { send })
}

fn h2_error(e: h2::Error) -> CallError {
    if e.is_io() {
        CallError::Io(e.to_string())
    } else {
        CallError::Protocol(e.to_string())
    }
}

/// Sends one request with an optional body and returns the response head and body stream.
pub async fn exchange(
    conn: &mut H2Conn,
    request: http::Request<()>,
    body: Option<Bytes>,
) -> Result<(http::response::Parts, RecvStream), CallError> {
    let mut send = conn.send.clone().ready().await.map_err(h2_error)?;
    let (response, mut stream) = send
        .send_request(request, body.is_none())
        .map_err(h2_error)?;
    if let Some(body) = body {
        stream.send_data(body, true).map_err(h2_error)?;
    }
    let response = response.await.map_err(h2_error)?;
    Ok(response.into_parts())
}

/// Reads the next DATA frame and gives its flow-control credit back at once.
pub async fn next_data(body: &mut RecvStream) -> Result<Option<Bytes>, CallError> {
    match body.data().await {
        None => Ok(None),
        Some(Err(e)) => Err(h2_error(e)),
        Some(Ok(data)) => {
            let _ = body.flow_control().release_capacity(data.len());
            Ok(Some(data))
        }
    }
}

pub async fn trailers(body: &mut RecvStream) -> Result<Option<http::HeaderMap>, CallError> {
    body.trailers().await.map_err(h2_error)
}

/// Plain HTTP requests over h2c.
pub struct Http2 {
    endpoint: Endpoint,
    request: Http1Request,
    method: http::Method,
    seed: u64,
    keep_body: bool,
}

impl Http2 {
    pub fn new(
        endpoint: Endpoint,
        request: Http1Request,
        seed: u64,
        keep_body: bool,
    ) -> Result<Http2, String> {
        let method = http::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| format!("`{}` is not an HTTP method", request.method))?;
        for (k, v) in &request.headers {
            http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("`{k}` is not a valid header name"))?;
            http::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of header `{k}` is not valid"))?;
        }
        Ok(Http2 {
            endpoint,
            request,
            method,
            seed,
            keep_body,
        })
    }

    fn build(&self, seq: u64) -> Result<(http::Request<()>, Option<Bytes>), CallError> {
        let path = self.request.path.render_string(seq, self.seed);
        let uri = format!("http://{}{}", self.endpoint.authority, path);
        let mut req = http::Request::builder()
            .method(self.method.clone())
            .uri(uri);
        for (k, v) in &self.request.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let body = self
            .request
            .body
            .as_ref()
            .map(|b| Bytes::from(b.render_string(seq, self.seed)));
        let req = req
            .body(())
            .map_err(|e| CallError::Protocol(format!("bad request: {e}")))?;
        Ok((req, body))
    }
}

impl Protocol for Http2 {
    type Conn = H2Conn;

    async fn connect(&self) -> Result<H2Conn, CallError> {
        open(&self.endpoint).await
    }

    async fn call(&self, conn: &mut H2Conn, seq: u64) -> Result<Reply, CallError> {
        let (req, body) = self.build(seq)?;
        let (head, mut stream) = exchange(conn, req, body).await?;
        let mut kept = self.keep_body.then(Vec::new);
        let mut total = 0u64;
        while let Some(data) = next_data(&mut stream).await? {
            total += data.len() as u64;
            if let Some(k) = &mut kept {
                k.extend_from_slice(&data);
            }
        }
        Ok(Reply {
            class: Class::Http(head.status.as_u16()),
            items: 1,
            bytes: total,
            body: kept.map(|b| vec![b]),
            detail: None,
        })
    }

    fn describe(&self) -> String {
        format!("HTTP/2 (h2c) {} {}", self.method, self.endpoint.url())
    }
}
