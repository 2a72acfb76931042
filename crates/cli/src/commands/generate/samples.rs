//! `generate --num-return K` (without `--beams`): K independent continuations of one prompt,
//! decoded together in one batch. Sequence `i` runs its own copy of the pipeline built with
//! seed `seed + i`, so sequence 0 is exactly what a plain run with `--seed seed` prints.
//!
//! Text output: with K = 1 the text streams as in a plain run; with more, each sequence is
//! printed when all have ended, under a `--- sequence i (finish reason) ---` line.

use std::io::Write;

use sieve_core::{BuildContext, Pipeline, Registry};
use sieve_engine::{generate_parallel, BatchModel, FinishReason, GenerateOptions, Generation};

use super::report::{sequences_json, stats_text, RunInfo, RunStats, SequenceReport};
use crate::error::{write_stderr, Failure};
use crate::pipeline;
use sieve_dsl::Parsed;

/// The most sequences one run may ask for.
pub const MAX_RETURN: usize = 256;

/// What a parallel run needs besides the model.
pub struct Request<'a> {
    /// How many sequences.
    pub k: usize,
    /// The pipeline, parsed once (built once per sequence).
    pub pipeline: &'a Parsed,
    /// The stages known.
    pub registry: &'a Registry,
    /// The prompt's ids.
    pub prompt: &'a [u32],
    /// Limits, stop strings, EOS, cancellation.
    pub options: &'a GenerateOptions<'a>,
    /// `--json`.
    pub json: bool,
    /// `--stats`.
    pub stats: bool,
}

/// Builds `k` copies of the pipeline, copy `i` with seed `seed + i`.
///
/// # Errors
/// A pipeline that does not build (already checked once, so only a stage whose build depends
/// on the seed could fail here).
pub fn pipelines(
    parsed: &Parsed,
    registry: &Registry,
    cx: &BuildContext<'_>,
    k: usize,
) -> Result<Vec<Pipeline>, Failure> {
    pipeline::copies(parsed, registry, cx, k)
}

/// Runs the request on `model`, writing to `out`.
///
/// # Errors
/// Usage: `k` of 0 or above [`MAX_RETURN`], bad stop strings; runtime: a model or stage failure.
pub fn run(
    request: &Request<'_>,
    model: &mut dyn BatchModel,
    detokenizer: &dyn sieve_engine::Detokenize,
    cx: &BuildContext<'_>,
    info: &RunInfo<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let pipelines = pipelines(request.pipeline, request.registry, cx, request.k)?;
    let stream = request.k == 1 && !request.json;
    let mut write_error = None;
    let mut on_text = |_: usize, piece: &str| {
        if stream && write_error.is_none() {
            if let Err(e) = out.write_all(piece.as_bytes()).and_then(|()| out.flush()) {
                write_error = Some(e);
            }
        }
    };
    let generations = generate_parallel(
        model,
        detokenizer,
        pipelines,
        request.prompt,
        request.options,
        &mut on_text,
    )
    .map_err(super::engine_failure)?;
    if let Some(e) = write_error {
        return Err(Failure::Output(e));
    }
    let all: Vec<&Generation> = generations.iter().collect();
    let run = RunStats::combined(&all);
    if request.json {
        let sequences: Vec<SequenceReport<'_>> = generations
            .iter()
            .map(|generation| SequenceReport {
                generation,
                score: None,
            })
            .collect();
        writeln!(out, "{}", sequences_json(&sequences, &run, info)).map_err(Failure::Output)?;
    } else if stream {
        writeln!(out).map_err(Failure::Output)?;
    } else {
        for (i, g) in generations.iter().enumerate() {
            writeln!(
                out,
                "--- sequence {i} ({}) ---\n{}",
                g.finish.as_str(),
                g.text
            )
            .map_err(Failure::Output)?;
        }
    }
    if request.stats {
        write_stderr(&stats_text(&run, info))?;
    }
    if generations
        .iter()
        .any(|g| g.finish == FinishReason::Cancelled)
    {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
