//! The HTTP request fuzzer of `sieve serve`: seeded random and mutated requests over every
//! route and every request field, sent over raw TCP to a live server, each answer checked by
//! one oracle ([`check`]).
//!
//! Requests come from several generators, picked at random for each case:
//!
//! - completions, chat completions, `/tokenize` and `/detokenize` bodies built field by field
//!   (every field of `crates/server/src/openai`: prompts as text, token ids, lists and nested
//!   lists; messages with every role, content parts and tool calls; `sampler` pipelines,
//!   `grammar(…)` and `dry(…)` included, as text or stage objects; the sampling fields,
//!   `logit_bias`, `stop`, `n`, `max_tokens`, log-probabilities, `response_format`, tools and
//!   `tool_choice`, streaming, template keywords, seeds), each value valid, at an edge, or of
//!   the wrong type (`u64::MAX`, `i64::MIN`, `1e308`, `-0.0`, `"NaN"`, lists for numbers…);
//! - byte-level mutations of such bodies: truncation, bytes deleted, duplicated or inserted
//!   (invalid UTF-8 included), numbers replaced by `NaN`/`Infinity`/`1e999`, duplicated
//!   keys, bodies that are not objects, byte-order marks;
//! - deep nesting (past serde_json's recursion limit and just under it), random bytes;
//! - `GET` routes, unknown paths, wrong methods;
//! - headers: `Content-Type` variants (none, `text/plain`, parameters, case), `Host` and
//!   `Origin` values the guard refuses, `Authorization`, chunked bodies, a `Content-Length`
//!   a few bytes short of the body or past it (the server then waits for its body timeout,
//!   so give it a short `--body-timeout`).
//!
//! Bodies stay under 64 KiB and `max_tokens` small, so that a case takes milliseconds. A case
//! is a pure function of the fuzzer's seed and the case's index: [`Fuzzer::case`] replays any
//! case exactly.
//!
//! The oracle: the server answers (no reset before an answer, no hang past the read
//! timeout); the status is 200 or one of [`CLIENT_ERRORS`] or 503 — never another 5xx; an
//! error's body is OpenAI's `{"error": {"message": str, "type": str, …}}`; a 200 is JSON, or
//! an event stream of JSON chunks ending with `data: [DONE]` (`/metrics` and `/health` may be
//! text).
//!
//! Used by `tests/serve_fuzz.rs` (a few hundred cases on every `cargo test`) and
//! `examples/serve_fuzz.rs` (as many as asked, against a release build).
#![allow(dead_code)]

use std::fmt;
use std::net::SocketAddr;

mod generate;
mod oracle;
mod values;
mod wire;

pub use generate::Fuzzer;
#[allow(unused_imports)] // the API of the fuzzer: each user takes a part
pub use oracle::{check, healthy, run_case, Outcome, KNOWN_BUGS};
pub use wire::{exchange, Reply};

/// The 4xx statuses a request may get.
pub const CLIENT_ERRORS: [u16; 10] = [400, 401, 403, 404, 405, 408, 413, 415, 422, 429];

/// The largest body a case sends.
pub const MAX_BODY: usize = 64 * 1024;

/// The vocabulary size the generators aim token ids at (ids past it are tried too).
const VOCAB_GUESS: u64 = 300;

/// A small, fast, seedable generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// An index into a collection of `len` items.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

/// How the body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` equal to the body's length.
    Exact,
    /// `Content-Length` this many bytes short of the body (the rest follows it).
    Short(usize),
    /// `Content-Length` this many bytes past the body (the server waits for the rest until
    /// its body timeout).
    Long(usize),
    /// `Transfer-Encoding: chunked`, in chunks of at most this many bytes.
    Chunked(usize),
}

/// One generated request.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's index (with the fuzzer's seed, all it takes to replay it).
    pub index: u64,
    /// The generator that made it.
    pub kind: &'static str,
    /// The method.
    pub method: String,
    /// The path (and query).
    pub path: String,
    /// `Host`: `None` sends none; `{addr}` is replaced by the server's address.
    pub host: Option<String>,
    /// `Content-Type`, when one is sent.
    pub content_type: Option<String>,
    /// Other headers.
    pub headers: Vec<(String, String)>,
    /// How the body is framed.
    pub framing: Framing,
    /// The body.
    pub body: Vec<u8>,
    /// Close the connection after this many bytes of the answer (a client that goes away,
    /// mid-stream when the answer is a stream).
    pub hang_up_after: Option<usize>,
}

impl Case {
    /// The request's bytes as sent to `addr`.
    pub fn wire(&self, addr: SocketAddr) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if let Some(host) = &self.host {
            head += &format!("Host: {}\r\n", host.replace("{addr}", &addr.to_string()));
        }
        head += "Connection: close\r\n";
        if let Some(t) = &self.content_type {
            head += &format!("Content-Type: {t}\r\n");
        }
        for (name, value) in &self.headers {
            head += &format!("{name}: {value}\r\n");
        }
        let mut out;
        match self.framing {
            Framing::Exact => {
                head += &format!("Content-Length: {}\r\n\r\n", self.body.len());
                out = head.into_bytes();
                out.extend_from_slice(&self.body);
            }
            Framing::Short(n) => {
                let len = self.body.len().saturating_sub(n);
                head += &format!("Content-Length: {len}\r\n\r\n");
                out = head.into_bytes();
                out.extend_from_slice(&self.body);
            }
            Framing::Long(n) => {
                head += &format!("Content-Length: {}\r\n\r\n", self.body.len() + n);
                out = head.into_bytes();
                out.extend_from_slice(&self.body);
            }
            Framing::Chunked(size) => {
                head += "Transfer-Encoding: chunked\r\n\r\n";
                out = head.into_bytes();
                for chunk in self.body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        out
    }
}

impl fmt::Display for Case {
    /// The request as a reader can check it: head fields, then the body escaped (cut after
    /// 2 KiB; the seed and the index replay it whole).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "case {} ({}): {} {}",
            self.index, self.kind, self.method, self.path
        )?;
        writeln!(
            f,
            "  host {:?}, content-type {:?}, framing {:?}, hang up after {:?}",
            self.host, self.content_type, self.framing, self.hang_up_after
        )?;
        for (name, value) in &self.headers {
            writeln!(f, "  {name}: {value}")?;
        }
        const SHOWN: usize = 2048;
        let shown = &self.body[..self.body.len().min(SHOWN)];
        write!(
            f,
            "  body ({} bytes): {}",
            self.body.len(),
            shown.escape_ascii()
        )?;
        if self.body.len() > SHOWN {
            write!(f, " …")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    /// A case is a function of the seed and its index alone, and generating never panics.
    #[test]
    fn cases_replay_and_generate_without_panics() {
        let addr: SocketAddr = ([127, 0, 0, 1], 1).into();
        for seed in 1..=3 {
            let f = Fuzzer::new(seed, "m");
            for i in 0..3000 {
                let case = f.case(i);
                assert!(case.body.len() <= MAX_BODY, "{case}");
                if i % 10 == 0 {
                    assert_eq!(case.wire(addr), f.case(i).wire(addr), "{case}");
                }
            }
        }
    }
}
