//! `sieve bench model`: prefill and decode speed of a model, the numbers a user can quote.
//!
//! A prompt of `--prompt-len` token ids (cycling through the vocabulary from id 1, so every
//! run feeds the same tokens) is prefilled in one forward pass; then `--gen` decode steps each
//! feed the argmax of the previous logits (`sieve_engine::time_model`). Reported: time to first
//! token (the prefill), prefill tokens/s, and the median and p90 decode step with its tokens/s.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use sieve_engine::time_model;

use crate::error::{Failure, ResultExt};
use crate::model;

/// `sieve bench model`.
#[derive(Debug, Args)]
pub struct BenchModelArgs {
    /// A Hugging Face model directory, or `embedded` / `embedded-draft`
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Tokens of the prompt prefilled in one pass
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub prompt_len: usize,
    /// Decode steps timed after the prefill
    #[arg(long = "gen", default_value_t = 32, value_name = "N")]
    pub generate: usize,
    /// ndarray, flex or cuda
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
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
    /// Prompt tokens per second of the prefill.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub prefill_tokens_per_s: f64,
    /// Median decode step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_median_ms: f64,
    /// 90th percentile decode step, ms.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_p90_ms: f64,
    /// 1 / median decode step.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub decode_tokens_per_s: f64,
}

/// Runs the command and returns its output.
///
/// # Errors
/// Usage: bad flags or model directory, a prompt that does not fit the context; runtime: a
/// model failure.
pub fn run(args: &BenchModelArgs) -> Result<String, Failure> {
    if args.prompt_len == 0 || args.generate == 0 {
        return Err(Failure::usage("--prompt-len and --gen must be at least 1"));
    }
    let backend = model::backend(args.backend.as_deref())?;
    let mut open = model::open(Some(&args.model), backend)?;
    let (vocab, context) = (open.files.dir.vocab_size(), open.files.dir.context_len());
    if args.prompt_len + args.generate > context {
        return Err(Failure::usage(format!(
            "--prompt-len {} + --gen {} exceeds the model's context of {context}",
            args.prompt_len, args.generate
        )));
    }
    let prompt: Vec<u32> = (0..args.prompt_len)
        .map(|i| (1 + i % (vocab - 1).max(1)) as u32)
        .collect();
    let timings = time_model(&mut open.model, &prompt, args.generate)
        .map_err(anyhow::Error::new)
        .runtime()?;
    let decode = timings
        .decode_step_ms()
        .ok_or_else(|| Failure::usage("no decode step"))?;
    let report = ModelReport {
        backend: backend.name().to_string(),
        prompt_len: args.prompt_len,
        generated: args.generate,
        time_to_first_token_s: timings.prefill.as_secs_f64(),
        prefill_tokens_per_s: timings.prefill_tokens_per_second(),
        decode_median_ms: decode.median,
        decode_p90_ms: decode.p90,
        decode_tokens_per_s: timings.decode_tokens_per_second(),
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
            "model:    {} ({} backend)",
            args.model.display(),
            report.backend
        );
        let _ = writeln!(
            text,
            "prefill:  {} tokens in {:.1} ms: {:.1} tokens/s (time to first token)",
            report.prompt_len,
            report.time_to_first_token_s * 1e3,
            report.prefill_tokens_per_s
        );
        let _ = writeln!(
            text,
            "decode:   median {:.2} ms, p90 {:.2} ms per token over {} steps: {:.1} tokens/s",
            report.decode_median_ms,
            report.decode_p90_ms,
            report.generated,
            report.decode_tokens_per_s
        );
        text
    })
}
