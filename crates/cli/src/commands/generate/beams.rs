//! `generate --beams N`: beam search with transformers' semantics (`sieve_engine::beam`),
//! printing the `--num-return` best hypotheses, best first, each with its score.
//!
//! The pipeline must end in `greedy` (beam search never draws at random); its transforming
//! and masking stages act on each beam's log-probabilities with that beam's own history.
//! Without `--sampler`, the pipeline is `greedy`. Text output prints each hypothesis under a
//! `--- beam i (score S, finish reason) ---` line; `--json` prints the `{"sequences": …}` form
//! with `score`.

use std::io::Write;
use std::sync::atomic::AtomicBool;

use sieve_core::{BuildContext, Registry};
use sieve_engine::{
    beam_search, BeamOptions, Detokenize, EarlyStopping, FinishReason, Generation, SkipSpecial,
};

use super::report::{sequences_json, stats_text, RunInfo, RunStats, SequenceReport};
use super::samples::pipelines;
use crate::error::{write_stderr, Failure};
use crate::model::ModelFiles;
use sieve_backends::LoadedModel;

/// The most beams one run may ask for.
pub const MAX_BEAMS: usize = 256;

/// What a beam search needs besides the model.
pub struct Request<'a> {
    /// `N`.
    pub beams: usize,
    /// `--num-return` (default 1).
    pub num_return: usize,
    /// `--length-penalty` (default 1).
    pub length_penalty: f64,
    /// `--early-stopping` (default `false`).
    pub early_stopping: EarlyStopping,
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// The pipeline, parsed once (built once per beam, with the run's seed).
    pub pipeline: &'a sieve_dsl::Parsed,
    /// The stages known.
    pub registry: &'a Registry,
    /// The prompt's ids.
    pub prompt: &'a [u32],
    /// Ctrl-C.
    pub cancel: &'a AtomicBool,
    /// `--json`.
    pub json: bool,
    /// `--stats`.
    pub stats: bool,
    /// `--special`: special tokens written into the text.
    pub show_special: bool,
}

/// Checks the counts before the model loads.
///
/// # Errors
/// Usage: `beams` of 0 or above [`MAX_BEAMS`], `num_return` above `beams`.
pub fn check(beams: usize, num_return: Option<usize>) -> Result<(), Failure> {
    if beams == 0 || beams > MAX_BEAMS {
        return Err(Failure::usage(format!(
            "--beams {beams}: give between 1 and {MAX_BEAMS} beams"
        )));
    }
    if let Some(k) = num_return.filter(|&k| k == 0 || k > beams) {
        return Err(Failure::usage(format!(
            "--num-return {k}: beam search returns between 1 and --beams ({beams}) sequences"
        )));
    }
    Ok(())
}

/// Runs the search on `model`, writing to `out`.
///
/// # Errors
/// Usage: a pipeline with a random selector; runtime: a model or stage failure.
pub fn run(
    request: &Request<'_>,
    model: &mut LoadedModel,
    files: &ModelFiles,
    cx: &BuildContext<'_>,
    info: &RunInfo<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let pipelines = pipelines(request.pipeline, request.registry, cx, request.beams)?;
    let options = BeamOptions {
        beams: request.beams,
        length_penalty: request.length_penalty,
        early_stopping: request.early_stopping,
        num_return: request.num_return,
        max_tokens: request.max_tokens,
        eos: files.dir.eos_ids(),
        vocab: Some(&files.vocab),
        accept_prompt: true,
        cancel: Some(request.cancel),
    };
    let search =
        beam_search(model, pipelines, request.prompt, &options).map_err(super::engine_failure)?;
    let mut generations = Vec::with_capacity(search.hypotheses.len());
    for h in &search.hypotheses {
        let text_ids = match h.finish {
            FinishReason::Eos => &h.tokens[..h.tokens.len().saturating_sub(1)],
            _ => &h.tokens[..],
        };
        let tokenizer: &dyn Detokenize = &files.tokenizer;
        let text = if request.show_special {
            tokenizer.decode(text_ids)
        } else {
            SkipSpecial(tokenizer).decode(text_ids)
        }
        .map_err(|e| Failure::Runtime(anyhow::Error::new(e)))?;
        let mut stats = search.stats;
        stats.generated_tokens = h.tokens.len();
        generations.push(Generation {
            text,
            tokens: h.tokens.clone(),
            finish: h.finish,
            stats,
            steps: Vec::new(),
        });
    }
    let all: Vec<&Generation> = generations.iter().collect();
    let mut run = RunStats::combined(&all);
    // The search's own counts: one forward step per search step, whatever the beams.
    run.stats = search.stats;
    run.decode_tokens_per_s = search.stats.decode_tokens_per_second();
    run.extra.push(("beams", serde_json::json!(request.beams)));
    if request.json {
        let sequences: Vec<SequenceReport<'_>> = generations
            .iter()
            .zip(&search.hypotheses)
            .map(|(generation, h)| SequenceReport {
                generation,
                score: Some(h.score),
            })
            .collect();
        writeln!(out, "{}", sequences_json(&sequences, &run, info)).map_err(Failure::Output)?;
    } else {
        for ((i, g), h) in generations.iter().enumerate().zip(&search.hypotheses) {
            writeln!(
                out,
                "--- beam {i} (score {:.4}, {}) ---\n{}",
                h.score,
                g.finish.as_str(),
                g.text
            )
            .map_err(Failure::Output)?;
        }
    }
    if request.stats {
        write_stderr(&stats_text(&run, info))?;
    }
    if search
        .hypotheses
        .iter()
        .any(|h| h.finish == FinishReason::Cancelled)
    {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
