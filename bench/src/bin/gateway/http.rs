//! The load generator's HTTP/1.1 client: one kept-alive connection per
//! task, each request written as bytes prepared before its clock starts,
//! each answer read by its `Content-Length`.
//!
//! Why not reqwest: on this benchmark it spent about as much CPU per
//! request as the gateway itself (the URL parsed twice, redirect and retry
//! layers, a pool), and every cycle the load generator spends is taken from
//! the two cores the gateway and the broker share. A real sender is on
//! another machine. This client speaks only what the gateway answers: a
//! status line, headers and a body with `Content-Length` (no chunked
//! bodies, no pipelining); anything else is a failure, counted as one.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest response head accepted; the gateway's are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;

/// An answer: its status and body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why a request got no answer, by kind (the failure counters' names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Connect,
    Timeout,
    /// The connection broke or closed before a whole answer.
    Io,
    /// An answer this client cannot read.
    Protocol,
}

impl Failure {
    pub fn kind(self) -> &'static str {
        match self {
            Self::Connect => "transport connect",
            Self::Timeout => "transport timeout",
            Self::Io => "transport io",
            Self::Protocol => "transport protocol",
        }
    }
}

/// One connection to the gateway, opened on first use and again after a
/// failure or a `Connection: close`.
pub struct Connection {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
}

impl Connection {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            stream: None,
            buf: Vec::with_capacity(1024),
        }
    }

    /// Writes `request` (a whole HTTP/1.1 request) and reads its answer,
    /// within `timeout`.
    pub async fn send(&mut self, request: &[u8], timeout: Duration) -> Result<Response, Failure> {
        let result = tokio::time::timeout(timeout, self.exchange(request))
            .await
            .unwrap_or(Err(Failure::Timeout));
        if result.is_err() {
            // Whatever is left on a broken exchange must not be read as the next answer.
            self.stream = None;
        }
        result
    }

    async fn exchange(&mut self, request: &[u8]) -> Result<Response, Failure> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(self.addr)
                .await
                .map_err(|_| Failure::Connect)?;
            stream.set_nodelay(true).map_err(|_| Failure::Connect)?;
            self.stream = Some(stream);
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(Failure::Connect);
        };
        stream.write_all(request).await.map_err(|_| Failure::Io)?;
        self.buf.clear();
        let head = loop {
            if let Some(head) = parse_head(&self.buf)? {
                break head;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(Failure::Protocol);
            }
            read_more(stream, &mut self.buf).await?;
        };
        let end = head.len + head.content_length;
        while self.buf.len() < end {
            read_more(stream, &mut self.buf).await?;
        }
        if self.buf.len() > end {
            // Bytes nobody asked for yet: the stream is out of step.
            return Err(Failure::Protocol);
        }
        if head.close {
            self.stream = None;
        }
        Ok(Response {
            status: head.status,
            body: self.buf[head.len..end].to_vec(),
        })
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Failure> {
    buf.reserve(1024);
    match stream.read_buf(buf).await {
        Ok(0) | Err(_) => Err(Failure::Io),
        Ok(_) => Ok(()),
    }
}

/// What the head of a response says.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    /// Bytes of the head, blank line included.
    len: usize,
    status: u16,
    content_length: usize,
    close: bool,
}

/// The head at the start of `buf`, once all of it is there.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Failure> {
    let Some(blank) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&buf[..blank]).map_err(|_| Failure::Protocol)?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().ok_or(Failure::Protocol)?;
    let status = match status_line.split(' ').collect::<Vec<_>>()[..] {
        ["HTTP/1.1", code, ..] => code.parse::<u16>().map_err(|_| Failure::Protocol)?,
        _ => return Err(Failure::Protocol),
    };
    let (mut content_length, mut close) = (None, false);
    for line in lines {
        let (name, value) = line.split_once(':').ok_or(Failure::Protocol)?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse::<usize>().map_err(|_| Failure::Protocol)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Failure::Protocol);
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    Ok(Some(Head {
        len: blank + 4,
        status,
        content_length: content_length.ok_or(Failure::Protocol)?,
        close,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let ok = b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            parse_head(ok),
            Ok(Some(Head {
                len: ok.len() - 2,
                status: 202,
                content_length: 2,
                close: false
            }))
        );
        let close =
            b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(
            parse_head(close),
            Ok(Some(Head {
                status: 503,
                close: true,
                ..
            }))
        ));
        assert_eq!(parse_head(b"HTTP/1.1 202 Accepted\r\ncontent-le"), Ok(None));
        let refused: &[&[u8]] = &[
            b"HTTP/1.1 202 Accepted\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            b"HTTP/2 200\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 2x2 Accepted\r\ncontent-length: 0\r\n\r\n",
        ];
        for head in refused {
            assert_eq!(parse_head(head), Err(Failure::Protocol), "{head:?}");
        }
    }

    /// Against a real axum server: kept alive across requests, bodies whole.
    #[tokio::test]
    async fn talks_to_axum() {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/echo",
            post(|body: String| async move { (axum::http::StatusCode::ACCEPTED, body) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let mut connection = Connection::new(addr);
        for body in ["first", "second, on the same connection"] {
            let request = format!(
                "POST /echo HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let response = connection
                .send(request.as_bytes(), Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(response.status, 202);
            assert_eq!(response.body, body.as_bytes());
        }
        let missing = connection
            .send(
                format!("POST /nowhere HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n")
                    .as_bytes(),
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(missing.status, 404);
    }
}
