//! What `generate` prints besides the text: `--stats` for people, `--json` for scripts — the
//! single-sequence form, and the `{"sequences": […]}` form of `--num-return`, `--beams` and
//! speculative runs.

use std::fmt::Write as _;

use serde_json::json;
use sieve::outcome::json_f64;
use sieve_engine::{tokens_per_second, Generation, GenerationStats};

/// What every report names besides the generation.
pub struct RunInfo<'a> {
    /// The canonical pipeline.
    pub sampler: &'a str,
    /// The seed of stages whose seed is -1 (of sequence 0 with `--num-return`).
    pub seed: u64,
    /// The backend's name.
    pub backend: &'a str,
}

/// One sequence of the `{"sequences": …}` form.
pub struct SequenceReport<'a> {
    /// Its text, tokens and finish reason.
    pub generation: &'a Generation,
    /// Its beam score (`sum_logprobs / len^length_penalty`), only for beams.
    pub score: Option<f64>,
}

/// The numbers of a run: one sequence's stats, or those of sequences decoded together.
#[derive(Debug, Clone)]
pub struct RunStats {
    /// Prompt, prefill and first-token figures; `generated_tokens` counts every sequence's
    /// tokens; decode, sampling and total times are the longest sequence's.
    pub stats: GenerationStats,
    /// Tokens per second after each sequence's first: the batch's aggregate rate.
    pub decode_tokens_per_s: f64,
    /// The finish reason of each sequence, comma-separated.
    pub finish: String,
    /// Figures of a mode (speculative decoding's acceptance), added to both reports.
    pub extra: Vec<(&'static str, serde_json::Value)>,
}

impl RunStats {
    /// The stats of one generation.
    pub fn single(generation: &Generation) -> Self {
        RunStats::combined(&[generation])
    }

    /// The stats of generations decoded together (sharing one prefill).
    pub fn combined(generations: &[&Generation]) -> Self {
        let mut stats = generations.first().map(|g| g.stats).unwrap_or_default();
        stats.generated_tokens = 0;
        let mut decoded = 0;
        for g in generations {
            let s = &g.stats;
            stats.generated_tokens += s.generated_tokens;
            decoded += s.generated_tokens.saturating_sub(1);
            stats.decode_time = stats.decode_time.max(s.decode_time);
            stats.total_time = stats.total_time.max(s.total_time);
            stats.sampling_time = stats.sampling_time.max(s.sampling_time);
        }
        let finish: Vec<&str> = generations.iter().map(|g| g.finish.as_str()).collect();
        RunStats {
            stats,
            decode_tokens_per_s: tokens_per_second(decoded, stats.decode_time),
            finish: finish.join(", "),
            extra: Vec::new(),
        }
    }
}

/// The single-sequence `--json` object, with `run` as its stats.
pub fn single_json(
    generation: &Generation,
    run: &RunStats,
    info: &RunInfo<'_>,
) -> serde_json::Value {
    json!({
        "text": generation.text,
        "tokens": generation.tokens,
        "finish_reason": generation.finish.as_str(),
        "stats": stats_json(run),
        "seed": info.seed,
        "sampler": info.sampler,
        "backend": info.backend,
    })
}

/// The `{"sequences": [{"text", "tokens", "finish_reason", "score"?}], "stats", "seed",
/// "sampler", "backend"}` object.
pub fn sequences_json(
    sequences: &[SequenceReport<'_>],
    run: &RunStats,
    info: &RunInfo<'_>,
) -> serde_json::Value {
    let list: Vec<serde_json::Value> = sequences
        .iter()
        .map(|s| {
            let mut one = json!({
                "text": s.generation.text,
                "tokens": s.generation.tokens,
                "finish_reason": s.generation.finish.as_str(),
            });
            if let Some(score) = s.score {
                one["score"] = json!(score);
            }
            one
        })
        .collect();
    json!({
        "sequences": list,
        "stats": stats_json(run),
        "seed": info.seed,
        "sampler": info.sampler,
        "backend": info.backend,
    })
}

/// The stats as JSON: counts, seconds and tokens per second.
pub fn stats_json(run: &RunStats) -> serde_json::Value {
    /// The stats as `--json` writes them (non-finite numbers as `"inf"`/`"nan"`, the CLI's one
    /// spelling).
    #[derive(serde::Serialize)]
    struct StatsReport {
        prompt_tokens: usize,
        generated_tokens: usize,
        #[serde(serialize_with = "json_f64")]
        time_to_first_token_s: f64,
        #[serde(serialize_with = "json_f64")]
        prefill_s: f64,
        #[serde(serialize_with = "json_f64")]
        prefill_tokens_per_s: f64,
        #[serde(serialize_with = "json_f64")]
        decode_tokens_per_s: f64,
        #[serde(serialize_with = "json_f64")]
        sampling_s: f64,
        #[serde(serialize_with = "json_f64")]
        total_s: f64,
    }
    let stats = &run.stats;
    let report = StatsReport {
        prompt_tokens: stats.prompt_tokens,
        generated_tokens: stats.generated_tokens,
        time_to_first_token_s: stats.time_to_first_token.as_secs_f64(),
        prefill_s: stats.prefill_time.as_secs_f64(),
        prefill_tokens_per_s: stats.prefill_tokens_per_second(),
        decode_tokens_per_s: run.decode_tokens_per_s,
        sampling_s: stats.sampling_time.as_secs_f64(),
        total_s: stats.total_time.as_secs_f64(),
    };
    let mut value = serde_json::to_value(report).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        for (key, v) in &run.extra {
            map.insert((*key).to_string(), v.clone());
        }
    }
    value
}

/// `--stats` for people.
pub fn stats_text(run: &RunStats, info: &RunInfo<'_>) -> String {
    let s = &run.stats;
    let mut text = String::new();
    let _ = writeln!(text, "sampler:        {}", info.sampler);
    let _ = writeln!(text, "seed:           {}", info.seed);
    let _ = writeln!(text, "backend:        {}", info.backend);
    let _ = writeln!(text, "prompt tokens:  {}", s.prompt_tokens);
    let _ = writeln!(
        text,
        "generated:      {} tokens, finish reason {}",
        s.generated_tokens, run.finish
    );
    let _ = writeln!(
        text,
        "first token:    {:.1} ms",
        s.time_to_first_token.as_secs_f64() * 1e3
    );
    let _ = writeln!(
        text,
        "prefill:        {:.1} tokens/s",
        s.prefill_tokens_per_second()
    );
    let _ = writeln!(
        text,
        "decode:         {:.1} tokens/s",
        run.decode_tokens_per_s
    );
    let _ = writeln!(
        text,
        "sampling:       {:.1} µs per token",
        s.sampling_time.as_secs_f64() * 1e6 / s.generated_tokens.max(1) as f64
    );
    for (key, v) in &run.extra {
        let label = format!("{}:", key.replace('_', " "));
        let value = match v.as_f64() {
            Some(x) if !v.is_u64() => format!("{x:.3}"),
            _ => v.to_string(),
        };
        let _ = writeln!(text, "{label:<15} {value}");
    }
    text
}
