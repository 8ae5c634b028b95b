//! Just enough of the Kafka wire protocol to ask a broker "are you really serving?".
//!
//! `cargo xtask up` must not call the broker ready when its port merely accepts TCP: the
//! listener opens before the broker has registered with its controller. So readiness is an
//! `ApiVersions` round trip (the broker speaks Kafka) followed by a `Metadata` request whose
//! answer lists at least one broker (the cluster has a registered, serving broker).
//!
//! Only non-flexible message versions are used (ApiVersions v0, Metadata v4..=v8), so no
//! compact encodings or tagged fields are needed. Encoding and decoding are pure functions over
//! byte slices; `probe` is the only I/O. Every decode bounds-checks and returns an error on
//! short, oversized or inconsistent input, never panics.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::ops::RangeInclusive;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};

const API_METADATA: i16 = 3;
const API_VERSIONS: i16 = 18;
const CLIENT_ID: &str = "callstream-xtask";
/// The Metadata versions this module can encode and decode (all non-flexible).
const METADATA_VERSIONS: RangeInclusive<i16> = 4..=8;
/// A readiness answer is tiny; anything bigger means we are not talking to a Kafka broker.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// One entry of an ApiVersions answer: the versions a broker serves for one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    pub api_key: i16,
    pub min: i16,
    pub max: i16,
}

/// A broker as a Metadata answer lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

/// What a successful probe learned about the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    pub cluster_id: Option<String>,
    pub controller_id: i32,
    pub brokers: Vec<Broker>,
}

/// Asks the broker at `addr` for its API versions and then for cluster metadata.
/// Succeeds only when the broker answers both and lists at least one broker.
pub fn probe(addr: SocketAddr, timeout: Duration) -> Result<ClusterInfo> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;

    let versions = round_trip(&mut stream, &encode_api_versions_request(1), 1)
        .and_then(|body| decode_api_versions_response(&body))
        .context("ApiVersions request")?;
    let version = pick_metadata_version(&versions)?;
    let body = round_trip(&mut stream, &encode_metadata_request(version, 2), 2)
        .context("Metadata request")?;
    let info = decode_metadata_response(version, &body).context("Metadata response")?;
    ensure!(
        !info.brokers.is_empty(),
        "the broker lists no registered brokers yet"
    );
    Ok(info)
}

/// Sends one framed request and returns the response body after checking its correlation id.
fn round_trip(stream: &mut TcpStream, request: &[u8], correlation_id: i32) -> Result<Vec<u8>> {
    stream.write_all(request)?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let size = usize::try_from(i32::from_be_bytes(size)).context("negative response size")?;
    ensure!(
        (4..=MAX_RESPONSE_BYTES).contains(&size),
        "response size {size} is not that of a Kafka response"
    );
    let mut frame = vec![0u8; size];
    stream.read_exact(&mut frame)?;
    let mut reader = Reader::new(&frame);
    let got = reader.i32()?;
    ensure!(
        got == correlation_id,
        "correlation id {got}, expected {correlation_id}"
    );
    Ok(frame.split_off(4))
}

/// Frames a request: size, then header v1 (key, version, correlation id, client id), then body.
fn frame(api_key: i16, api_version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(32 + body.len());
    msg.extend_from_slice(&api_key.to_be_bytes());
    msg.extend_from_slice(&api_version.to_be_bytes());
    msg.extend_from_slice(&correlation_id.to_be_bytes());
    put_string(&mut msg, CLIENT_ID);
    msg.extend_from_slice(body);
    let mut framed = Vec::with_capacity(4 + msg.len());
    // A header plus our fixed bodies is far below i32::MAX.
    framed.extend_from_slice(&(msg.len() as i32).to_be_bytes());
    framed.extend_from_slice(&msg);
    framed
}

fn put_string(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as i16).to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
}

/// ApiVersions v0 has an empty body. Every broker answers it: one that no longer serves v0
/// replies UNSUPPORTED_VERSION in the v0 layout, which still tells us its versions.
pub fn encode_api_versions_request(correlation_id: i32) -> Vec<u8> {
    frame(API_VERSIONS, 0, correlation_id, &[])
}

/// Decodes an ApiVersions v0 body: error code, then (key, min, max) triples.
pub fn decode_api_versions_response(body: &[u8]) -> Result<Vec<ApiRange>> {
    let mut r = Reader::new(body);
    let error_code = r.i16()?;
    // 35 = UNSUPPORTED_VERSION still carries the version list we need.
    ensure!(
        error_code == 0 || error_code == 35,
        "ApiVersions error code {error_code}"
    );
    let n = r.array_len()?;
    let mut ranges = Vec::with_capacity(n.min(256));
    for _ in 0..n {
        ranges.push(ApiRange {
            api_key: r.i16()?,
            min: r.i16()?,
            max: r.i16()?,
        });
    }
    Ok(ranges)
}

/// The newest Metadata version both the broker and this module speak.
pub fn pick_metadata_version(ranges: &[ApiRange]) -> Result<i16> {
    let Some(range) = ranges.iter().find(|r| r.api_key == API_METADATA) else {
        bail!("the broker does not list the Metadata API");
    };
    let high = range.max.min(*METADATA_VERSIONS.end());
    let low = range.min.max(*METADATA_VERSIONS.start());
    ensure!(
        low <= high,
        "the broker serves Metadata v{}..=v{}, xtask speaks v{}..=v{}",
        range.min,
        range.max,
        METADATA_VERSIONS.start(),
        METADATA_VERSIONS.end()
    );
    Ok(high)
}

/// Metadata v4..=v8 for no topics at all: we only want the broker list.
pub fn encode_metadata_request(version: i16, correlation_id: i32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i32.to_be_bytes()); // topics: empty array, not null (= all)
    body.push(0); // allow_auto_topic_creation = false
    if version >= 8 {
        body.push(0); // include_cluster_authorized_operations
        body.push(0); // include_topic_authorized_operations
    }
    frame(API_METADATA, version, correlation_id, &body)
}

/// Decodes the head of a Metadata v4..=v8 body; the (empty) topic list that follows is skipped.
pub fn decode_metadata_response(version: i16, body: &[u8]) -> Result<ClusterInfo> {
    ensure!(
        METADATA_VERSIONS.contains(&version),
        "Metadata v{version} is not decoded here"
    );
    let mut r = Reader::new(body);
    let _throttle_ms = r.i32()?;
    let n = r.array_len()?;
    let mut brokers = Vec::with_capacity(n.min(256));
    for _ in 0..n {
        let node_id = r.i32()?;
        let host = r.string()?.context("null broker host")?;
        let port = r.i32()?;
        let _rack = r.string()?;
        brokers.push(Broker {
            node_id,
            host,
            port,
        });
    }
    let cluster_id = r.string()?;
    let controller_id = r.i32()?;
    Ok(ClusterInfo {
        cluster_id,
        controller_id,
        brokers,
    })
}

/// A bounds-checked big-endian reader over a response body.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        ensure!(
            self.buf.len() >= n,
            "response truncated: wanted {n} more bytes, {} left",
            self.buf.len()
        );
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn i16(&mut self) -> Result<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An array length; null (-1) reads as empty. A length that cannot fit in what is left
    /// is rejected before anything is allocated for it.
    fn array_len(&mut self) -> Result<usize> {
        let n = self.i32()?;
        if n < 0 {
            return Ok(0);
        }
        let n = n as usize;
        ensure!(
            n <= self.buf.len(),
            "array of {n} entries in {} bytes",
            self.buf.len()
        );
        Ok(n)
    }

    /// A nullable string (int16 length, -1 = null).
    fn string(&mut self) -> Result<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let bytes = self.take(len as usize)?;
        Ok(Some(
            String::from_utf8(bytes.to_vec()).context("string is not UTF-8")?,
        ))
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
