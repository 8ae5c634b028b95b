//! A slow HTTP/1.1 client on a real socket, for the tests of the services' slow-client
//! limits (the gateway's and the operator API's `tests/slow_clients.rs`): it dribbles a
//! request a byte at a time and reads back whatever answer, or close, comes.
//!
//! Every wait is bounded by [`BOUND`], so a server that neither answers nor closes fails
//! the test instead of hanging it.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// The longest any step waits.
pub const BOUND: Duration = Duration::from_secs(10);

/// Reads one answer: its head and as much body as its `content-length` says, or up to the
/// close (empty when the server closed without answering).
pub async fn read_answer(read: &mut (impl AsyncRead + Unpin)) -> Vec<u8> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let length = content_length(&received[..end]).unwrap_or(0);
            if received.len() >= end + 4 + length {
                return received;
            }
        }
        match read.read(&mut chunk).await {
            Ok(0) | Err(_) => return received,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
    }
}

fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            value.trim().parse().ok()
        } else {
            None
        }
    })
}

/// Writes `at_once`, then one byte every 50 ms of `slowly` (then spaces for ever) until the
/// server answers or closes; returns the answer (see [`read_answer`]).
///
/// # Panics
/// When the server neither answers nor closes within [`BOUND`] (the test fails).
pub async fn dribble(stream: TcpStream, at_once: &[u8], slowly: &[u8]) -> Vec<u8> {
    let (mut read, mut write) = stream.into_split();
    write
        .write_all(at_once)
        .await
        .expect("the first bytes are written");
    let answered = tokio::spawn(async move { read_answer(&mut read).await });
    let mut bytes = slowly.iter().copied().chain(std::iter::repeat(b' '));
    let sending = async {
        while !answered.is_finished() {
            let byte = bytes.next().unwrap_or(b' ');
            if write.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    timeout(BOUND, sending)
        .await
        .expect("the server never answered nor closed");
    drop(write);
    timeout(BOUND, answered)
        .await
        .expect("the answer is read")
        .expect("the reader did not panic")
}
