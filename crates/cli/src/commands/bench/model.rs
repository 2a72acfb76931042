//! `sieve bench model`: prefill and decode speed of a model, the numbers a user can quote.
//!
//! A prompt of `--prompt-len` token ids (cycling through the vocabulary from id 1, so every
//! run feeds the same tokens) is prefilled in one forward pass; then `--gen` decode steps each
//! feed the argmax of the previous logits (`sieve_engine::time_model`). Reported: time to first
//! token (the first prefill), prefill tokens/s of the first and (median) of `--prefills` warm
//! repeats, the median and p90 decode step with its tokens/s, and beside it the floor: the
//! bytes of weights a decode step reads over the machine's read bandwidth measured with all
//! cores (`bench::bandwidth`), with the ratio; the load time and the peak resident memory
//! (the model file's mapped pages included; the tokenizer is built only for `--prompt`,
//! `--draft` or `--lookup`, since synthetic ids need none).
//! With `--batch 1,4,8`, for each size the prompt is also prefilled once and forked into that
//! many sequences (or, with `--separate-prompts`, prefilled by each sequence itself, so no
//! cache is shared), and `--gen` rounds each time one step of every size in turn, a step
//! decoding one token of each of its sequences in one forward pass
//! (`sieve_engine::time_batches`): the aggregate tokens/s per batch size, and its ratio to
//! one sequence. The sizes' steps alternate, so a noisy machine moves them all alike.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use sieve_backends::{GgufModel, WeightDtype};
use sieve_engine::{time_batches, time_model, BatchPrompts};

use super::bandwidth::{peak_rss, read_bandwidth};
use super::speculative::{compare as compare_speculative, SpeculativeReport};
use crate::commands::generate::speculative::{check_tokens, open_draft, DEFAULT_DRAFT_TOKENS};
use crate::error::{Failure, ResultExt};
use crate::model;

/// `sieve bench model`.
#[derive(Debug, Args)]
pub struct BenchModelArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// or `embedded` / `embedded-draft`
    #[arg(long, value_name = "MODEL")]
    pub model: PathBuf,
    /// Tokens of the prompt prefilled in one pass
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub prompt_len: usize,
    /// Decode steps timed after the prefill
    #[arg(long = "gen", default_value_t = 32, value_name = "N")]
    pub generate: usize,
    /// Prefills repeated after the first (warm), reported as their median
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub prefills: usize,
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load: model::LoadArgs,
    /// Threads the model computes on and the bandwidth is measured with (default: one per core)
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Also time decode steps of several sequences at once, for each of these batch sizes
    /// (e.g. 1,4,8; their steps alternate): aggregate tokens/s per batch size
    #[arg(long, value_name = "SIZES")]
    pub batch: Option<String>,
    /// With --batch, every sequence prefills the prompt itself instead of being a fork of one
    /// prefilled sequence: no shared cache, what as many different prompts cost
    #[arg(long = "separate-prompts", requires = "batch")]
    pub separate_prompts: bool,
    /// The prompt as text (encoded with the tokenizer) instead of --prompt-len synthetic ids
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Also compare speculative decoding with this draft model against plain decoding
    #[arg(long, value_name = "DIR", conflicts_with = "lookup")]
    pub draft: Option<PathBuf>,
    /// Draft tokens per round with --draft (default 5)
    #[arg(long = "draft-tokens", value_name = "K", requires = "draft")]
    pub draft_tokens: Option<usize>,
    /// Also compare speculative decoding by prompt lookup (up to N tokens) against plain
    #[arg(long, value_name = "N")]
    pub lookup: Option<usize>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// One batch size of `--batch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchReport {
    /// Sequences per decode step.
    pub batch: usize,
    /// `"forked"` (forks of one prefilled sequence, sharing its cache) or `"separate"`
    /// (`--separate-prompts`: each prefilled alone).
    pub prompts: &'static str,
    /// Median step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub step_median_ms: f64,
    /// 90th percentile step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub step_p90_ms: f64,
    /// Tokens per second over all sequences at the median step.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub tokens_per_s: f64,
    /// `tokens_per_s` over that of one sequence in the same run (batch 1's, timed in
    /// alternation with the other sizes, when 1 is among them; else the plain decode steps').
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub speedup: f64,
}

/// What `sieve bench model` reports. Serialized with exactly these keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelReport {
    /// The backend.
    pub backend: String,
    /// Prompt tokens prefilled.
    pub prompt_len: usize,
    /// Decode steps timed.
    pub generated: usize,
    /// Seconds of the prefill (= time to first token, sampling aside).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub time_to_first_token_s: f64,
    /// Prompt tokens per second of the first prefill.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub prefill_tokens_per_s: f64,
    /// Prompt tokens per second at the median warm prefill (0 with `--prefills 0`).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub warm_prefill_tokens_per_s: f64,
    /// Median decode step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_median_ms: f64,
    /// 90th percentile decode step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_p90_ms: f64,
    /// 1 / median decode step.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_tokens_per_s: f64,
    /// Bytes of weights one decode step reads (every weight but the embedding rows, at its
    /// in-memory size).
    pub weights_read_bytes: u64,
    /// The machine's read bandwidth measured with all cores, GB/s.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub bandwidth_gb_s: f64,
    /// `weights_read_bytes` at that bandwidth: the fastest a decode step can be, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_floor_ms: f64,
    /// Median decode step over the floor.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_vs_floor: f64,
    /// Threads the model computed on, and the bandwidth was measured with.
    pub threads: usize,
    /// The element type the weight matrices were kept in (`--dtype`, resolved).
    pub dtype: String,
    /// The element type of the key/value cache (`--kv-cache`).
    pub kv_cache: String,
    /// Seconds to load the weights (directory already read).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub load_s: f64,
    /// Peak resident memory of the process, bytes (`null` off Linux).
    pub peak_rss_bytes: Option<u64>,
    /// Decode steps of several sequences at once (`--batch`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<BatchReport>,
    /// Speculative against plain decoding (`--draft` / `--lookup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpeculativeReport>,
}

/// The most sequences `--batch` may ask for.
pub const MAX_BATCH: usize = 256;

/// Runs the command and returns its output.
///
/// # Errors
/// Usage: bad flags or model directory, a prompt that does not fit the context; runtime: a
/// model failure.
pub fn run(args: &BenchModelArgs) -> Result<String, Failure> {
    if args.prompt_len == 0 || args.generate == 0 {
        return Err(Failure::usage("--prompt-len and --gen must be at least 1"));
    }
    let sizes = match &args.batch {
        Some(text) => crate::input::counts(text, MAX_BATCH)
            .map_err(|e| Failure::usage(format!("--batch: {e}")))?,
        None => Vec::new(),
    };
    let (backend, precision) = args.load.resolve()?;
    model::threads(args.threads)?;
    // The tokenizer (and the samplers' vocabulary) only when text is encoded or decoded:
    // synthetic ids need neither, and a 150 000-token vocabulary's tables would count in the
    // peak resident memory reported.
    let needs_text = args.prompt.is_some() || args.draft.is_some() || args.lookup.is_some();
    let files = match needs_text {
        true => Some(model::open_files(Some(&args.model))?),
        false => None,
    };
    let draft_tokens = match (&args.draft, args.lookup) {
        (Some(_), _) => Some(args.draft_tokens.unwrap_or(DEFAULT_DRAFT_TOKENS)),
        (None, n) => n,
    };
    if let Some(n) = draft_tokens {
        check_tokens(
            if args.draft.is_some() {
                "--draft-tokens"
            } else {
                "--lookup"
            },
            n,
        )?;
    }
    let draft_files = match (&args.draft, &files) {
        (Some(dir), Some(files)) => Some(open_draft(dir, files)?),
        _ => None,
    };
    let dir = match &files {
        Some(files) => files.dir.clone(),
        None => model::open_dir(Some(&args.model))?,
    };
    let t = std::time::Instant::now();
    let mut loaded = model::load_dir(&dir, backend, precision)?;
    let load_s = t.elapsed().as_secs_f64();
    let (vocab, context) = (dir.vocab_size(), dir.context_len());
    if args.prompt_len + args.generate > context {
        return Err(Failure::usage(format!(
            "--prompt-len {} + --gen {} exceeds the model's context of {context}",
            args.prompt_len, args.generate
        )));
    }
    let prompt: Vec<u32> = match (&args.prompt, &files) {
        (Some(text), Some(files)) => model::prompt_tokens(files, Some(text), None)?,
        _ => (0..args.prompt_len)
            .map(|i| (1 + i % (vocab - 1).max(1)) as u32)
            .collect(),
    };
    if args.prompt.is_some() && sieve_engine::check_prompt(&prompt, args.generate, context).is_err()
    {
        return Err(Failure::usage(format!(
            "--prompt ({} tokens) + --gen {} exceeds the model's context of {context}",
            prompt.len(),
            args.generate
        )));
    }
    let timings = time_model(&mut loaded, &prompt, args.generate, args.prefills)
        .map_err(anyhow::Error::new)
        .runtime()?;
    let decode = timings
        .decode_step_ms()
        .ok_or_else(|| Failure::usage("no decode step"))?;
    let mut batches = Vec::new();
    let (prompts, prompts_name) = match args.separate_prompts {
        true => (BatchPrompts::Separate, "separate"),
        false => (BatchPrompts::Forked, "forked"),
    };
    let timed = time_batches(&mut loaded, &prompt, args.generate, &sizes, prompts)
        .map_err(anyhow::Error::new)
        .runtime()?;
    for t in &timed {
        let step = t
            .step_ms()
            .ok_or_else(|| Failure::usage("no decode step"))?;
        batches.push(BatchReport {
            batch: t.batch,
            prompts: prompts_name,
            step_median_ms: step.median,
            step_p90_ms: step.p90,
            tokens_per_s: t.tokens_per_second(),
            speedup: 0.0,
        });
    }
    // One sequence's rate: batch 1's when it was timed, else the plain decode steps'.
    let base = batches
        .iter()
        .find(|b| b.batch == 1)
        .map_or(timings.decode_tokens_per_second(), |b| b.tokens_per_s);
    for b in &mut batches {
        b.speedup = b.tokens_per_s / base;
    }
    let threads = sieve_backends::threads();
    // Quantized matrices (a GGUF file's blocks, or `--quantize`) are counted matrix by
    // matrix at the size they are kept in; float ones at the model's bytes per weight.
    let quantized = matches!(precision.weights, WeightDtype::Quant(_));
    let blocks = quantized || dir.gguf().is_some();
    let weights_read_bytes = match blocks {
        true => dir.bytes_read_per_token(precision.weights).runtime()?,
        false => (loaded.config().weights_read_per_token() * loaded.bytes_per_weight()) as u64,
    };
    // Read before the bandwidth buffer is allocated, which would count otherwise.
    let peak_rss_bytes = peak_rss();
    let bandwidth = read_bandwidth(threads, weights_read_bytes as usize);
    let decode_floor_ms = weights_read_bytes as f64 / bandwidth * 1e3;
    let speculative = match (draft_tokens, &files) {
        (Some(k), Some(files)) => {
            let mut draft = match draft_files {
                Some(files) => Some(model::load(files, backend, precision)?),
                None => None,
            };
            Some(compare_speculative(
                &mut loaded,
                draft.as_mut().map(|d| &mut d.model),
                &files.tokenizer,
                &prompt,
                args.generate,
                k,
            )?)
        }
        _ => None,
    };
    let report = ModelReport {
        backend: backend.name().to_string(),
        prompt_len: args.prompt_len,
        generated: args.generate,
        time_to_first_token_s: timings.prefill.as_secs_f64(),
        prefill_tokens_per_s: timings.prefill_tokens_per_second(),
        warm_prefill_tokens_per_s: timings.warm_prefill_tokens_per_second(),
        decode_median_ms: decode.median,
        decode_p90_ms: decode.p90,
        decode_tokens_per_s: timings.decode_tokens_per_second(),
        weights_read_bytes,
        bandwidth_gb_s: bandwidth / 1e9,
        decode_floor_ms,
        decode_vs_floor: decode.median / decode_floor_ms,
        threads,
        dtype: match dir.gguf() {
            _ if quantized => precision.weights.name().to_string(),
            Some(gguf) if precision.weights == WeightDtype::Auto => stored_types(gguf),
            _ => loaded.weights_dtype().to_string(),
        },
        kv_cache: loaded.kv_dtype().to_string(),
        load_s,
        peak_rss_bytes,
        batches,
        speculative,
    };
    Ok(if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )
    } else {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "model:    {} ({} backend, {} weights, {} kv cache)",
            args.model.display(),
            report.backend,
            report.dtype,
            report.kv_cache
        );
        let _ = writeln!(
            text,
            "load:     {:.2} s, peak resident memory {}",
            report.load_s,
            report
                .peak_rss_bytes
                .map_or("unknown".to_string(), |b| format!(
                    "{:.1} MB",
                    b as f64 / 1e6
                ))
        );
        let _ = writeln!(
            text,
            "prefill:  {} tokens in {:.1} ms: {:.1} tokens/s (time to first token); warm: {:.1} tokens/s",
            report.prompt_len,
            report.time_to_first_token_s * 1e3,
            report.prefill_tokens_per_s,
            report.warm_prefill_tokens_per_s
        );
        let _ = writeln!(
            text,
            "decode:   median {:.2} ms, p90 {:.2} ms per token over {} steps: {:.1} tokens/s",
            report.decode_median_ms,
            report.decode_p90_ms,
            report.generated,
            report.decode_tokens_per_s
        );
        let _ = writeln!(
            text,
            "floor:    {:.1} MB of weights per token at {:.1} GB/s ({} threads): {:.2} ms; decode is {:.2}× the floor",
            report.weights_read_bytes as f64 / 1e6,
            report.bandwidth_gb_s,
            report.threads,
            report.decode_floor_ms,
            report.decode_vs_floor
        );
        if let Some(s) = &report.speculative {
            let _ = writeln!(
                text,
                "speculative ({}, {} draft tokens): {:.1} tokens/s against {:.1} plain: {:.2}×; acceptance {:.2}, {:.2} target passes per token",
                s.drafter,
                s.draft_tokens,
                s.speculative_tokens_per_s,
                s.plain_tokens_per_s,
                s.speedup,
                s.acceptance_rate,
                s.target_forwards_per_token
            );
        }
        for b in &report.batches {
            let _ = writeln!(
                text,
                "batch {:>3} ({} prompts): median {:.2} ms, p90 {:.2} ms per step: {:.1} tokens/s ({:.2}× one sequence)",
                b.batch, b.prompts, b.step_median_ms, b.step_p90_ms, b.tokens_per_s, b.speedup
            );
        }
        text
    })
}

/// The element types a GGUF model's matrices are stored in, most bytes first (`q4_1+q8_0`):
/// what a decode step reads when the model is kept in its blocks.
fn stored_types(gguf: &GgufModel) -> String {
    let mut bytes: Vec<(String, u64)> = Vec::new();
    for (_, info) in gguf.tensors().filter(|(_, info)| info.dims.len() == 2) {
        let name = info.ggml_type.name().to_ascii_lowercase();
        match bytes.iter_mut().find(|(n, _)| *n == name) {
            Some((_, b)) => *b += info.size,
            None => bytes.push((name, info.size)),
        }
    }
    bytes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let names: Vec<String> = bytes.into_iter().map(|(n, _)| n).collect();
    names.join("+")
}
