//! `GET /metrics`: counters, gauges and histograms in Prometheus' text format (version
//! 0.0.4), written by hand (a few atomics and two small histograms need no library).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the time-to-first-token buckets.
const TTFT_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Upper bounds (seconds) of the time-per-output-token buckets.
const TPOT_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// A cumulative histogram.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, x: f64) {
        for (bound, count) in self.bounds.iter().zip(&mut self.counts) {
            if x <= *bound {
                *count += 1;
            }
        }
        self.sum += x;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    completions: AtomicU64,
    chat: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    prompt_tokens: AtomicU64,
    generated_tokens: AtomicU64,
    ttft: Mutex<Histogram>,
    tpot: Mutex<Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            completions: AtomicU64::new(0),
            chat: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            generated_tokens: AtomicU64::new(0),
            ttft: Mutex::new(Histogram::new(&TTFT_BUCKETS)),
            tpot: Mutex::new(Histogram::new(&TPOT_BUCKETS)),
        }
    }
}

/// Which endpoint a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// The gauges the scheduler holds, read when the metrics are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Requests waiting to start.
    pub waiting: usize,
    /// Sequences in the model.
    pub running: usize,
    /// Whether the model is loaded.
    pub ready: bool,
}

impl Metrics {
    /// A request accepted by `endpoint` with `prompt_tokens` tokens.
    pub fn request(&self, endpoint: Endpoint, prompt_tokens: usize) {
        match endpoint {
            Endpoint::Completions => &self.completions,
            Endpoint::Chat => &self.chat,
        }
        .fetch_add(1, Ordering::Relaxed);
        self.prompt_tokens
            .fetch_add(prompt_tokens as u64, Ordering::Relaxed);
    }

    /// A generated token.
    pub fn token(&self) {
        self.generated_tokens.fetch_add(1, Ordering::Relaxed);
    }

    /// A request failed while generating.
    pub fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A client went away before its request finished.
    pub fn cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    /// The time from a request's acceptance (validated, queued) to its first token.
    pub fn time_to_first_token(&self, d: Duration) {
        if let Ok(mut h) = self.ttft.lock() {
            h.observe(d.as_secs_f64());
        }
    }

    /// The mean time between a choice's tokens after the first.
    pub fn time_per_output_token(&self, d: Duration) {
        if let Ok(mut h) = self.tpot.lock() {
            h.observe(d.as_secs_f64());
        }
    }

    /// The Prometheus text.
    pub fn render(&self, gauges: Gauges) -> String {
        let mut out = String::new();
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP sieve_requests_total Generation requests accepted, by endpoint.\n\
             # TYPE sieve_requests_total counter\n\
             sieve_requests_total{{endpoint=\"completions\"}} {}\n\
             sieve_requests_total{{endpoint=\"chat_completions\"}} {}",
            load(&self.completions),
            load(&self.chat)
        );
        let counters = [
            (
                "sieve_requests_failed_total",
                "Requests that failed while generating.",
                load(&self.failed),
            ),
            (
                "sieve_requests_cancelled_total",
                "Requests whose client went away before they finished.",
                load(&self.cancelled),
            ),
            (
                "sieve_prompt_tokens_total",
                "Prompt tokens of accepted requests.",
                load(&self.prompt_tokens),
            ),
            (
                "sieve_generation_tokens_total",
                "Tokens generated.",
                load(&self.generated_tokens),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let gauges = [
            (
                "sieve_requests_waiting",
                "Requests waiting to start.",
                gauges.waiting,
            ),
            (
                "sieve_sequences_running",
                "Sequences in the model (prefilling or decoding).",
                gauges.running,
            ),
            (
                "sieve_model_ready",
                "1 once the model is loaded.",
                usize::from(gauges.ready),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        if let Ok(h) = self.ttft.lock() {
            h.write(
                &mut out,
                "sieve_time_to_first_token_seconds",
                "Time from a request's acceptance (validated, queued) to its first token.",
            );
        }
        if let Ok(h) = self.tpot.lock() {
            h.write(
                &mut out,
                "sieve_time_per_output_token_seconds",
                "Mean time between a choice's tokens after its first.",
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format_with_cumulative_buckets() {
        let m = Metrics::default();
        m.request(Endpoint::Chat, 7);
        m.token();
        m.token();
        m.time_to_first_token(Duration::from_millis(30));
        m.time_to_first_token(Duration::from_millis(300));
        let text = m.render(Gauges {
            waiting: 2,
            running: 3,
            ready: true,
        });
        for line in [
            "sieve_requests_total{endpoint=\"chat_completions\"} 1",
            "sieve_prompt_tokens_total 7",
            "sieve_generation_tokens_total 2",
            "sieve_requests_waiting 2",
            "sieve_sequences_running 3",
            "sieve_model_ready 1",
            "sieve_time_to_first_token_seconds_bucket{le=\"0.025\"} 0",
            "sieve_time_to_first_token_seconds_bucket{le=\"0.05\"} 1",
            "sieve_time_to_first_token_seconds_bucket{le=\"0.5\"} 2",
            "sieve_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2",
            "sieve_time_to_first_token_seconds_count 2",
            "sieve_time_per_output_token_seconds_count 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
