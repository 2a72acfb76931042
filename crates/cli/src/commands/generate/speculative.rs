//! `generate --draft DIR [--draft-tokens K]` and `generate --lookup N`: speculative decoding
//! (`sieve_engine::speculative`). The output has exactly the distribution of a plain run (for
//! `greedy`, the very tokens); what changes is how many target forward passes it takes.
//!
//! The draft model must share the target's tokenizer: the same logits length and the same
//! bytes for every token, checked before its weights load. Its pipeline is a second copy of
//! the target's (same stages, own state). `--stats`/`--json` add `drafted`, `accepted`,
//! `acceptance_rate`, `target_forwards` and `target_forwards_per_token`.

use std::io::Write;
use std::path::Path;

use sieve_backends::{BackendKind, LoadedModel};
use sieve_core::{BuildContext, Pipeline, Registry};
use sieve_engine::{
    generate_speculative, Drafter, FinishReason, GenerateOptions, SpeculativeOptions,
    SpeculativeStats,
};

use super::report::{single_json, stats_text, RunInfo, RunStats};
use crate::error::{write_stderr, Failure};
use crate::model::{self, ModelFiles};
use crate::pipeline;

/// Draft tokens per round when `--draft-tokens` is not given.
pub const DEFAULT_DRAFT_TOKENS: usize = 5;
/// The most draft tokens per round.
pub const MAX_DRAFT_TOKENS: usize = 64;
/// The longest n-gram prompt lookup matches (transformers' `max_matching_ngram_size`
/// default).
pub const LOOKUP_NGRAM: usize = 2;

/// Where drafts come from.
pub enum Source {
    /// A draft model (its files read, checked against the target's vocabulary) and the draft
    /// tokens per round.
    Model {
        /// `--draft`.
        files: Box<ModelFiles>,
        /// `--draft-tokens`.
        tokens: usize,
    },
    /// Prompt lookup of up to this many tokens per round.
    Lookup(usize),
}

impl Source {
    /// The draft tokens per round.
    fn tokens(&self) -> usize {
        match self {
            Source::Model { tokens, .. } => *tokens,
            Source::Lookup(n) => *n,
        }
    }
}

/// Checks a draft count before anything loads.
///
/// # Errors
/// Usage: 0 or more than [`MAX_DRAFT_TOKENS`].
pub fn check_tokens(flag: &str, n: usize) -> Result<(), Failure> {
    if n == 0 || n > MAX_DRAFT_TOKENS {
        return Err(Failure::usage(format!(
            "{flag} {n}: give between 1 and {MAX_DRAFT_TOKENS} draft tokens"
        )));
    }
    Ok(())
}

/// Opens the draft model's files and checks they speak the target's vocabulary.
///
/// # Errors
/// Usage: a bad directory, or another vocabulary.
pub fn open_draft(dir: &Path, target: &ModelFiles) -> Result<ModelFiles, Failure> {
    let files = model::open_files(Some(dir))?;
    let (ours, theirs) = (target.dir.vocab_size(), files.dir.vocab_size());
    if ours != theirs || files.vocab != target.vocab {
        return Err(Failure::usage(format!(
            "--draft {}: the draft model must use the target's tokenizer (vocabularies of {theirs} \
             and {ours} logits{})",
            dir.display(),
            if ours == theirs { " with different tokens" } else { "" }
        )));
    }
    Ok(files)
}

/// Everything the run needs besides the target.
pub struct Request<'a> {
    /// Where drafts come from.
    pub source: Source,
    /// The backend both models run on.
    pub backend: BackendKind,
    /// The weight and cache element types of both models.
    pub precision: model::Precision,
    /// The pipeline, parsed once (a second copy is built for the draft).
    pub pipeline: &'a sieve_dsl::Parsed,
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

/// The stats speculation adds to the report.
pub fn extra(s: &SpeculativeStats) -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("drafted", s.drafted.into()),
        ("accepted", s.accepted.into()),
        ("acceptance_rate", s.acceptance_rate().into()),
        ("target_forwards", s.target_forwards.into()),
        (
            "target_forwards_per_token",
            s.target_forwards_per_token().into(),
        ),
    ]
}

/// Runs the request on `target` with `target_pipeline`, writing to `out`.
///
/// # Errors
/// Usage: a bad draft directory or vocabulary, a pipeline whose selector exposes no
/// distribution; runtime: a model or stage failure.
pub fn run(
    request: Request<'_>,
    target: &mut LoadedModel,
    files: &ModelFiles,
    target_pipeline: &mut Pipeline,
    cx: &BuildContext<'_>,
    info: &RunInfo<'_>,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let draft_tokens = request.source.tokens();
    let mut draft_model = match request.source {
        Source::Model { files, .. } => {
            Some(model::load(*files, request.backend, request.precision)?)
        }
        Source::Lookup(_) => None,
    };
    let mut draft_pipeline = pipeline::build(request.pipeline, request.registry, cx)?;
    let drafter = match draft_model.as_mut() {
        Some(open) => Drafter::Model {
            model: &mut open.model,
            pipeline: &mut draft_pipeline,
        },
        None => Drafter::Lookup {
            max_ngram: LOOKUP_NGRAM,
        },
    };
    let speculative = SpeculativeOptions {
        draft_tokens,
        seed: cx.seed,
    };
    let mut write_error = None;
    let mut on_text = |piece: &str| {
        if !request.json && write_error.is_none() {
            if let Err(e) = out.write_all(piece.as_bytes()).and_then(|()| out.flush()) {
                write_error = Some(e);
            }
        }
    };
    let (generation, stats) = generate_speculative(
        target,
        drafter,
        &files.tokenizer,
        target_pipeline,
        request.prompt,
        request.options,
        &speculative,
        &mut on_text,
    )
    .map_err(super::engine_failure)?;
    if let Some(e) = write_error {
        return Err(Failure::Output(e));
    }
    let mut run = RunStats::single(&generation);
    run.extra = extra(&stats);
    if request.json {
        writeln!(out, "{}", single_json(&generation, &run, info)).map_err(Failure::Output)?;
    } else {
        writeln!(out).map_err(Failure::Output)?;
    }
    if request.stats {
        write_stderr(&stats_text(&run, info))?;
    }
    if generation.finish == FinishReason::Cancelled {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
