//! `sieve generate`: run a model with a sampler pipeline, streaming text as it arrives.
//!
//! - The prompt is encoded with the tokenizer's special tokens (BOS for Llama, as transformers
//!   does). Prompt tokens are the start of the history every stage sees, and are passed to
//!   every stage's `accept` before the first step: penalties, DRY and n-gram bans include the
//!   prompt (as llama.cpp's server and HF do).
//! - Without `--sampler`: the sampling defaults of `generation_config.json` (see
//!   [`sieve_text::sampling::generation_pipeline`]), else
//!   `top_k(40) | top_p(0.95) | min_p(0.05) | temp(0.8)`.
//! - The pipeline is parsed once; every copy the run needs (one per sequence with
//!   `--num-return`, per beam with `--beams`, the draft's with `--draft`) is built from it.
//! - Stops at an EOS id (from `generation_config.json`, else `config.json`), at any `--stop`
//!   string (never printed, nor any text that may still become one), after `-n` tokens, or at
//!   the end of the model's context (finish reason `length`).
//! - Order of work, so that a mistake costs as little as possible: `--backend` and `--sampler`
//!   are checked first (a typo in the pipeline is reported even when the model directory is
//!   missing), then the directory's small files are read (configuration, tokenizer), the
//!   pipeline is built against the tokenizer's vocabulary and the prompt encoded, and only then
//!   are the weights loaded.

mod beams;
mod report;
mod samples;
pub mod speculative;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;
use sieve_core::{BuildContext, Registry};
use sieve_engine::{generate, EarlyStopping, FinishReason, GenerateOptions};
use sieve_text::sampling;

use report::{single_json, stats_text, RunInfo, RunStats};

use crate::error::{write_stderr, Failure};
use crate::plugins::PluginArgs;
use crate::{chat, model, pipeline};

/// Shown after `sieve generate --help`.
pub const EXAMPLES: &str = "Examples:
  sieve generate --prompt \"Once upon a time\" -n 20 --seed 7 --stats
  sieve generate --model ./SmolLM2-135M --prompt \"The capital of France is\" \\
      --sampler \"penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)\" --seed 7 --stop \".\"";

pub use sieve_text::sampling::{DEFAULT_MAX_TOKENS, FALLBACK_PIPELINE};

/// `sieve generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// or `embedded` / `embedded-draft` (the story models inside sieve); default: `embedded`
    #[arg(long, value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// The prompt (with --chat: the user message)
    #[arg(long, value_name = "TEXT", required_unless_present_any = ["messages", "tokens"])]
    pub prompt: Option<String>,
    /// The prompt as token ids instead of text, e.g. 1,2,3 (used as they are: no BOS added)
    #[arg(long, value_name = "IDS", conflicts_with_all = ["prompt", "chat", "messages", "system"])]
    pub tokens: Option<String>,
    /// Chat: the model's chat template applied to a conversation.
    #[command(flatten)]
    pub chat: chat::ChatArgs,
    /// The sampler pipeline (default: from generation_config.json, else
    /// "top_k(40) | top_p(0.95) | min_p(0.05) | temp(0.8)")
    #[arg(long, short = 's', value_name = "PIPELINE")]
    pub sampler: Option<String>,
    /// Seed of the random stages whose seed is -1 (default: random, printed with --stats/--json)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Most tokens to generate
    #[arg(long = "max-tokens", short = 'n', value_name = "N")]
    pub max_tokens: Option<usize>,
    /// Stop when the text contains this string (repeatable: at most 16, of at most 256 bytes
    /// each); it is not printed
    #[arg(long, value_name = "S")]
    pub stop: Vec<String>,
    /// Write special tokens (BOS, EOS, chat markers) into the text; by default they are left
    /// out, as transformers' skip_special_tokens=True and `sieve serve` do. Stop strings match
    /// the text as written
    #[arg(long)]
    pub special: bool,
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load: model::LoadArgs,
    /// Threads the model computes on (default: one per core); the output does not depend on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Print prompt tokens, time to first token, prefill and decode tokens/s to stderr
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object at the end instead of streaming text
    #[arg(long)]
    pub json: bool,
    /// Draw K independent continuations of the prompt in one batch (sequence i uses seed
    /// seed + i, so sequence 0 equals a plain run); --json then prints {"sequences": […]}
    #[arg(long = "num-return", value_name = "K")]
    pub num_return: Option<usize>,
    /// Beam search with N beams (transformers' num_beams, do_sample=False); the pipeline must
    /// end in greedy (the default with --beams)
    #[arg(long, value_name = "N", conflicts_with = "stop")]
    pub beams: Option<usize>,
    /// Beam search: a finished hypothesis scores sum_logprobs / length^F (default 1)
    #[arg(
        long = "length-penalty",
        value_name = "F",
        requires = "beams",
        allow_negative_numbers = true
    )]
    pub length_penalty: Option<f64>,
    /// Beam search: stop once N hypotheses are finished (true), when no beam can beat them at
    /// its current length (false, the default), or at its longest (never)
    #[arg(long = "early-stopping", value_name = "WHEN", requires = "beams")]
    pub early_stopping: Option<EarlyStopping>,
    /// Speculative decoding with this draft model (same tokenizer): the output has exactly the
    /// plain run's distribution (greedy: the same tokens) in fewer target passes
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["beams", "num_return", "lookup"])]
    pub draft: Option<PathBuf>,
    /// Draft tokens per round with --draft (default 5)
    #[arg(long = "draft-tokens", value_name = "K", requires = "draft")]
    pub draft_tokens: Option<usize>,
    /// Speculative decoding by prompt lookup: up to N tokens copied from where the text's last
    /// n-gram (n ≤ 2) occurred before, checked by the model (no second model)
    #[arg(long, value_name = "N", conflicts_with_all = ["beams", "num_return"])]
    pub lookup: Option<usize>,
    /// Plugin libraries.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Runs the command, streaming text to `out`.
///
/// # Errors
/// Usage: bad flags, model directory or pipeline, a prompt longer than the context; runtime:
/// a model or stage failure.
pub fn run(args: &GenerateArgs, registry: &Registry, out: &mut dyn Write) -> Result<(), Failure> {
    let (backend, precision) = args.load.resolve()?;
    model::threads(args.threads)?;
    // The one parse of the pipeline: `--sampler` before anything slow, else the default.
    let written = match &args.sampler {
        Some(text) => Some(pipeline::check(text, registry)?),
        None => None,
    };
    let files = model::open_files(args.model.as_deref())?;
    let seed = args.seed.unwrap_or_else(sampling::random_seed);
    let parsed = match (written, args.beams) {
        (Some(parsed), _) => parsed,
        (None, Some(_)) => pipeline::check("greedy", registry)?,
        (None, None) => pipeline::check(
            &sampling::default_text(None, files.dir.generation()),
            registry,
        )?,
    };
    let cx = BuildContext {
        seed,
        vocab: Some(&files.vocab),
    };
    let mut first = pipeline::build(&parsed, registry, &cx)?;
    let prompt = if args.chat.active() {
        chat::prompt_tokens(&files, &args.chat, args.prompt.as_deref())?
    } else {
        model::prompt_tokens(&files, args.prompt.as_deref(), args.tokens.as_deref())?
    };
    let context = files.dir.context_len();
    sieve_engine::check_prompt(&prompt, 0, context).map_err(|e| match e {
        sieve_engine::Error::ContextOverflow { tokens, context } => Failure::usage(format!(
            "the prompt is {tokens} tokens, longer than the model's context of {context}"
        )),
        other => Failure::usage(other.to_string()),
    })?;
    let max_tokens = sampling::max_tokens(args.max_tokens, files.dir.generation());
    if let Some(beams) = args.beams {
        beams::check(beams, args.num_return)?;
    } else if let Some(k) = args.num_return {
        if k == 0 || k > samples::MAX_RETURN {
            return Err(Failure::usage(format!(
                "--num-return {k}: give between 1 and {} sequences",
                samples::MAX_RETURN
            )));
        }
    }
    let draft = match (&args.draft, args.lookup) {
        (Some(dir), _) => {
            let tokens = args
                .draft_tokens
                .unwrap_or(speculative::DEFAULT_DRAFT_TOKENS);
            speculative::check_tokens("--draft-tokens", tokens)?;
            Some(speculative::Source::Model {
                files: Box::new(speculative::open_draft(dir, &files)?),
                tokens,
            })
        }
        (None, Some(n)) => {
            speculative::check_tokens("--lookup", n)?;
            Some(speculative::Source::Lookup(n))
        }
        (None, None) => None,
    };
    let sampler = parsed.spec().to_string();
    let info = RunInfo {
        sampler: &sampler,
        seed,
        backend: backend.name(),
    };
    let mut open = model::load(files, backend, precision)?;
    // Set by Ctrl-C, and below when stdout has gone: the loop stops before the next token.
    let cancel = Arc::new(AtomicBool::new(false));
    // Should registering fail, Ctrl-C kills the process as it would without a handler.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&cancel));
    let files = &open.files;
    let options = GenerateOptions {
        max_tokens,
        stop: args.stop.clone(),
        eos: files.dir.eos_ids(),
        vocab: Some(&files.vocab),
        accept_prompt: true,
        step_stats: false,
        cancel: Some(&cancel),
        show_special: args.special,
    };
    if let Some(beams) = args.beams {
        let request = beams::Request {
            beams,
            num_return: args.num_return.unwrap_or(1),
            length_penalty: args.length_penalty.unwrap_or(1.0),
            early_stopping: args.early_stopping.unwrap_or_default(),
            max_tokens,
            pipeline: &parsed,
            registry,
            prompt: &prompt,
            cancel: &cancel,
            json: args.json,
            stats: args.stats,
            show_special: args.special,
        };
        let cx = BuildContext {
            seed,
            vocab: Some(&open.files.vocab),
        };
        return beams::run(&request, &mut open.model, &open.files, &cx, &info, out);
    }
    if let Some(source) = draft {
        let request = speculative::Request {
            source,
            backend,
            precision,
            pipeline: &parsed,
            registry,
            prompt: &prompt,
            options: &options,
            json: args.json,
            stats: args.stats,
        };
        let cx = BuildContext {
            seed,
            vocab: Some(&open.files.vocab),
        };
        return speculative::run(
            request,
            &mut open.model,
            &open.files,
            &mut first,
            &cx,
            &info,
            out,
        );
    }
    if let Some(k) = args.num_return {
        let request = samples::Request {
            k,
            pipeline: &parsed,
            registry,
            prompt: &prompt,
            options: &options,
            json: args.json,
            stats: args.stats,
        };
        let cx = BuildContext {
            seed,
            vocab: Some(&files.vocab),
        };
        return samples::run(&request, &mut open.model, &files.tokenizer, &cx, &info, out);
    }
    let mut write_error = None;
    let mut on_text = |piece: &str| {
        if !args.json && write_error.is_none() {
            if let Err(e) = out.write_all(piece.as_bytes()).and_then(|()| out.flush()) {
                write_error = Some(e);
                cancel.store(true, Ordering::Relaxed);
            }
        }
    };
    let generation = generate(
        &mut open.model,
        &files.tokenizer,
        &mut first,
        &prompt,
        &options,
        &mut on_text,
    )
    .map_err(engine_failure)?;
    if let Some(e) = write_error {
        // Stdout went away: nothing more reaches it, but the stats were asked for.
        if args.stats {
            write_stderr(&stats_text(&RunStats::single(&generation), &info))?;
        }
        return Err(Failure::Output(e));
    }
    if args.json {
        let run = RunStats::single(&generation);
        writeln!(out, "{}", single_json(&generation, &run, &info)).map_err(Failure::Output)?;
    } else {
        writeln!(out).map_err(Failure::Output)?;
    }
    if args.stats {
        write_stderr(&stats_text(&RunStats::single(&generation), &info))?;
    }
    if generation.finish == FinishReason::Cancelled {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

/// An engine error as the command reports it: bad stop strings and beam options are usage,
/// the rest runtime.
fn engine_failure(e: sieve_engine::Error) -> Failure {
    match e {
        sieve_engine::Error::EmptyStop | sieve_engine::Error::StopLimit(_) => {
            Failure::usage(format!("--stop: {e}"))
        }
        sieve_engine::Error::BeamSelector { .. } | sieve_engine::Error::BeamOptions(_) => {
            Failure::usage(format!("--beams: {e}"))
        }
        sieve_engine::Error::SpeculativeSelector { .. } => Failure::usage(e.to_string()),
        e => Failure::Runtime(anyhow::Error::new(e)),
    }
}
