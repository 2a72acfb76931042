//! `sieve bench sampler`: time a pipeline per token against the floor (one read of the
//! logits), on the workload of [`super::workload`].
//!
//! Each of the two is first warmed up (at least [`WARMUP_RUNS`] runs and [`WARMUP`] of
//! time), which also measures its rough cost; then `--iters` samples are timed. A sample
//! times a batch of consecutive runs long enough to last [`MIN_SAMPLE`] (one run for any
//! realistic vocabulary; more for tiny ones, where the clock's own cost would dominate) and
//! records the time per run. The report gives the median and 90th percentile per token in µs,
//! and the ratio of the medians.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use sieve_core::{BuildContext, Registry};

use super::workload::{normal_logits, SamplerWorkload, HISTORY_LEN, LOGITS_SEED, LOGITS_STD};
use crate::error::{Failure, ResultExt};
use crate::input::{self, Scale};
use crate::pipeline;
use crate::plugins::PluginArgs;
use crate::stats::Summary;

/// `sieve bench sampler`.
#[derive(Debug, Args)]
pub struct BenchSamplerArgs {
    /// The pipeline to time
    #[arg(long, short, value_name = "PIPELINE")]
    pub sampler: String,
    /// Vocabulary size (at most 134 217 728 = 2^27): that many logits drawn from
    /// Normal(0, 2.5²) with a fixed seed
    #[arg(long, value_name = "N", required_unless_present = "logits", value_parser = clap::value_parser!(u64).range(1..=crate::input::MAX_LOGITS as u64))]
    pub vocab: Option<u64>,
    /// Time on these logits instead (a file or a comma list)
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub logits: Option<String>,
    /// Number of timed samples (at most 10 000 000)
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub iters: u64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Least warm-up time before measuring.
pub const WARMUP: Duration = Duration::from_millis(200);
/// Least number of warm-up runs.
pub const WARMUP_RUNS: u32 = 10;
/// Least duration of one timed sample.
pub const MIN_SAMPLE: Duration = Duration::from_micros(20);

/// What `sieve bench sampler` reports. Serialized with exactly these keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// The pipeline in canonical form.
    pub sampler: String,
    /// Number of logits per token.
    pub vocab: usize,
    /// Number of timed samples of each kind.
    pub iters: usize,
    /// Median time per token of the pipeline with the logits vector handed over (as
    /// `sieve generate` does), µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub median_us: f64,
    /// 90th percentile of the same, µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub p90_us: f64,
    /// Median time per token with the logits copied in from a slice, µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub copying_median_us: f64,
    /// 90th percentile of the same, µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub copying_p90_us: f64,
    /// Median time of the floor, µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub floor_median_us: f64,
    /// 90th percentile time of the floor, µs.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub floor_p90_us: f64,
    /// `median_us / floor_median_us`.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub ratio: f64,
    /// `copying_median_us / floor_median_us`.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub copying_ratio: f64,
}

/// Runs the command and returns its output.
///
/// # Errors
/// Usage: a bad `--logits`, `--vocab` disagreeing with the file, a zero vocabulary; pipeline:
/// a `--sampler` that does not compile; runtime: the pipeline fails on the logits.
pub fn run(args: &BenchSamplerArgs, registry: &Registry) -> Result<String, Failure> {
    let vocab = args.vocab.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
    let iters = usize::try_from(args.iters).unwrap_or(usize::MAX);
    let logits = match (&args.logits, vocab) {
        (Some(arg), vocab) => {
            let logits = input::load(arg, Scale::Logits)
                .map_err(|e| e.context("--logits"))
                .usage()?;
            if let Some(v) = vocab.filter(|&v| v != logits.len()) {
                return Err(Failure::usage(format!(
                    "--vocab is {v} but --logits holds {} values",
                    logits.len()
                )));
            }
            logits
        }
        (None, Some(0)) => return Err(Failure::usage("--vocab must be at least 1")),
        (None, Some(vocab)) => normal_logits(vocab, LOGITS_SEED),
        (None, None) => return Err(Failure::usage("give --vocab N or --logits FILE")),
    };
    let cx = BuildContext {
        seed: LOGITS_SEED,
        vocab: None,
    };
    let compiled = pipeline::compile(&args.sampler, registry, &cx)?;
    let mut workload = SamplerWorkload::new(compiled.pipeline, logits);
    workload
        .step_copying()
        .map_err(|e| anyhow::Error::new(e).context("the pipeline failed on the bench logits"))
        .runtime()?;

    let mut failure = None;
    let pipeline_samples = time_each_run(
        iters,
        &mut workload,
        |w| w.refill(),
        |w| {
            if let Err(e) = black_box(w.step()) {
                failure.get_or_insert(e);
            }
        },
    );
    let (copying_samples, batch) = time_per_run(iters, || {
        if let Err(e) = black_box(workload.step_copying()) {
            failure.get_or_insert(e);
        }
    });
    if let Some(e) = failure {
        return Err(anyhow::Error::new(e).context("the pipeline failed during the bench"))
            .runtime();
    }
    let (floor_samples, floor_batch) = time_per_run(iters, || {
        black_box(workload.floor());
    });
    let report = report(
        compiled.spec.to_string(),
        workload.logits().len(),
        iters,
        [&pipeline_samples, &copying_samples, &floor_samples],
    );
    Ok(if args.json {
        report.json()
    } else {
        report.text(args.logits.is_some(), batch, floor_batch)
    })
}

/// Builds the report from samples in µs per run: `[handed over, copied in, floor]`.
fn report(sampler: String, vocab: usize, iters: usize, samples: [&[f64]; 3]) -> BenchReport {
    let nan = Summary {
        median: f64::NAN,
        p90: f64::NAN,
    };
    let [p, c, f] = samples.map(|s| Summary::of(s).unwrap_or(nan));
    BenchReport {
        sampler,
        vocab,
        iters,
        median_us: p.median,
        p90_us: p.p90,
        copying_median_us: c.median,
        copying_p90_us: c.p90,
        floor_median_us: f.median,
        floor_p90_us: f.p90,
        ratio: p.median / f.median,
        copying_ratio: c.median / f.median,
    }
}

/// Warms up, then times `iters` single runs of `run`, each after an untimed `setup`; returns
/// the µs of each run.
fn time_each_run<W>(
    iters: usize,
    workload: &mut W,
    mut setup: impl FnMut(&mut W),
    mut run: impl FnMut(&mut W),
) -> Vec<f64> {
    let start = Instant::now();
    let mut runs = 0u32;
    while runs < WARMUP_RUNS || start.elapsed() < WARMUP {
        setup(workload);
        run(workload);
        runs += 1;
    }
    (0..iters)
        .map(|_| {
            setup(workload);
            let t = Instant::now();
            run(workload);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect()
}

/// Warms `run` up, then times `iters` samples; returns the µs per run of each sample and the
/// number of runs per sample.
fn time_per_run(iters: usize, mut run: impl FnMut()) -> (Vec<f64>, usize) {
    let start = Instant::now();
    let mut runs = 0u32;
    while runs < WARMUP_RUNS || start.elapsed() < WARMUP {
        run();
        runs += 1;
    }
    let per_run = start.elapsed().as_secs_f64() / runs as f64;
    let batch = (MIN_SAMPLE.as_secs_f64() / per_run).ceil().max(1.0) as usize;
    let samples = (0..iters)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                run();
            }
            t.elapsed().as_secs_f64() * 1e6 / batch as f64
        })
        .collect();
    (samples, batch)
}

impl BenchReport {
    /// Human-readable report.
    pub fn text(&self, from_file: bool, batch: usize, floor_batch: usize) -> String {
        let mut out = String::new();
        let source = if from_file {
            "from --logits".to_string()
        } else {
            format!("Normal(0, {LOGITS_STD}²), seed {LOGITS_SEED}")
        };
        let _ = writeln!(out, "sampler:  {}", self.sampler);
        let _ = writeln!(
            out,
            "vocab:    {} logits ({source}), {HISTORY_LEN}-token history",
            self.vocab
        );
        let _ = writeln!(
            out,
            "iters:    {} samples each (runs per sample: pipeline 1, copying {batch}, floor {floor_batch})",
            self.iters
        );
        let _ = writeln!(
            out,
            "pipeline: median {:.3} µs, p90 {:.3} µs per token (logits vector handed over, as `generate` does)",
            self.median_us, self.p90_us
        );
        let _ = writeln!(
            out,
            "copying:  median {:.3} µs, p90 {:.3} µs per token (logits copied in from a slice), {:.2}× the floor",
            self.copying_median_us, self.copying_p90_us, self.copying_ratio
        );
        let _ = writeln!(
            out,
            "floor:    median {:.3} µs, p90 {:.3} µs (math::max over the logits)",
            self.floor_median_us, self.floor_p90_us
        );
        let _ = writeln!(
            out,
            "ratio:    {:.2}× the floor (median / floor median)",
            self.ratio
        );
        out
    }

    /// The report as indented JSON (non-finite numbers, which only a zero-time floor could
    /// give, become `null`).
    pub fn json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a BenchReport always serializes");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_takes_medians_and_ratio() {
        let r = report(
            "greedy".into(),
            10,
            4,
            [
                &[4.0, 2.0, 6.0, 8.0],
                &[6.0, 6.0, 6.0, 6.0],
                &[1.0, 1.0, 2.0, 2.0],
            ],
        );
        assert_eq!(
            (r.median_us, r.floor_median_us, r.ratio),
            (5.0, 1.5, 5.0 / 1.5)
        );
        assert_eq!((r.copying_median_us, r.copying_ratio), (6.0, 4.0));
        assert!((r.p90_us - 7.4).abs() < 1e-12);
        let parsed: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        let mut keys: Vec<&str> = parsed
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        let mut want = [
            "sampler",
            "vocab",
            "iters",
            "median_us",
            "p90_us",
            "copying_median_us",
            "copying_p90_us",
            "copying_ratio",
            "floor_median_us",
            "floor_p90_us",
            "ratio",
        ];
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(parsed["ratio"], 5.0 / 1.5);
    }

    #[test]
    fn timing_each_run_sets_up_before_every_run() {
        let mut log = Vec::new();
        let samples = time_each_run(3, &mut log, |l| l.push('s'), |l| l.push('r'));
        assert_eq!(samples.len(), 3);
        assert!(log.chunks(2).all(|pair| pair == ['s', 'r']), "{log:?}");
    }

    #[test]
    fn timing_counts_every_run() {
        let mut calls = 0usize;
        let (samples, batch) = time_per_run(3, || calls += 1);
        assert_eq!(samples.len(), 3);
        assert!(batch >= 1 && samples.iter().all(|&s| s >= 0.0));
        assert!(calls >= WARMUP_RUNS as usize + 3 * batch);
    }
}
