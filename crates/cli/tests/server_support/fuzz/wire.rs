//! One case over raw TCP: send it, read the answer (status, headers, de-chunked body).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::Case;

/// A response as read off the socket.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the whole body arrived (false when the client hung up first).
    pub complete: bool,
}

impl Reply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `case` to `addr` and reads the answer; `timeout` bounds each read (a hang guard).
///
/// # Errors
/// The connection failed, was reset before an answer, timed out, or the answer is not HTTP.
pub fn exchange(addr: SocketAddr, case: &Case, timeout: Duration) -> Result<Reply, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    // The server may answer and close before reading a whole (bad) request: a failed write
    // is not yet a failure, a missing answer is.
    let _ = stream.write_all(&case.wire(addr));
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let limit = case.hang_up_after.unwrap_or(usize::MAX);
    let mut read_error = None;
    while raw.len() < limit {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        }
    }
    let hung_up = raw.len() >= limit;
    drop(stream);
    if let Some(e) = read_error {
        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            return Err(format!(
                "no answer within {timeout:?} (hang): {} bytes read",
                raw.len()
            ));
        }
        if !has_head(&raw) {
            return Err(format!(
                "the connection failed before an answer: {e} ({} bytes read)",
                raw.len()
            ));
        }
    }
    parse(&raw, !hung_up)
}

pub(super) fn has_head(raw: &[u8]) -> bool {
    raw.windows(4).any(|w| w == b"\r\n\r\n")
}

/// Parses a response; `whole` says whether the client read it to its end.
pub(super) fn parse(raw: &[u8], whole: bool) -> Result<Reply, String> {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(format!(
            "not an HTTP answer ({} bytes): {}",
            raw.len(),
            raw[..raw.len().min(512)].escape_ascii()
        ));
    };
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("a bad status line: {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let (body, complete) = if chunked {
        dechunk(body)
    } else {
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok());
        match length {
            Some(n) => (body[..n.min(body.len())].to_vec(), body.len() >= n),
            None => (body.to_vec(), whole),
        }
    };
    Ok(Reply {
        status,
        headers,
        body,
        complete: complete && whole,
    })
}

/// The data of a chunked body, and whether its last (empty) chunk arrived.
pub(super) fn dechunk(mut body: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size = std::str::from_utf8(&body[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
        let Some(size) = size else {
            return (out, false);
        };
        let rest = &body[end + 2..];
        if size == 0 {
            return (out, true);
        }
        if rest.len() < size {
            out.extend_from_slice(rest);
            return (out, false);
        }
        out.extend_from_slice(&rest[..size]);
        body = rest[size..].strip_prefix(b"\r\n").unwrap_or(&rest[size..]);
    }
}
