//! `sieve compare`: what each pipeline does to the text. For every pipeline, every prompt and
//! every sample `j` (run seed `--seed + j`, the same for every pipeline, so pipelines are
//! compared on the same random streams), generate a continuation with the engine recording
//! per-step statistics, then report per pipeline the [`metrics`]: diversity (distinct-1/2/3,
//! repeated-4-gram rate, pairwise overlap), quality under the raw model (mean log-probability,
//! perplexity, mean entropy, single-candidate share), length, finish reasons and time per
//! token — as a table, as JSON, and as a quality-against-diversity plot ([`plot`]).
//!
//! Every number but the time per token is deterministic for a seed. A final EOS token counts
//! for the log-probability (the model chose it) but not for the diversity n-grams (it is no
//! text).

pub mod metrics;
pub mod plot;

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use sieve_core::{BuildContext, Registry};
use sieve_engine::{generate, FinishReason, GenerateOptions, Generation};

use crate::error::{Failure, ResultExt};
use crate::plugins::PluginArgs;
use crate::{model, pipeline};

/// Shown after `sieve compare --help`.
pub const EXAMPLES: &str = "Examples:
  sieve compare --sampler greedy --sampler \"min_p(0.1)\" --sampler \"penalty(1.3)\" \\
      --prompt \"Once upon a time\" --samples 4 --seed 1 --plot compare.svg
  sieve compare --model ./SmolLM2-135M --prompts prompts.txt \\
      --sampler \"temp(0.7) | top_p(0.9)\" --sampler \"top_k(40) | temp(1.2)\" --json";

/// The prompt when neither `--prompt` nor `--prompts` is given: the opening of the embedded
/// model's stories.
pub const DEFAULT_PROMPT: &str = "Once upon a time";

/// Tokens generated per sample when `--max-tokens` is not given.
pub const DEFAULT_MAX_TOKENS: usize = 64;

/// `sieve compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// or `embedded` / `embedded-draft` (default: `embedded`)
    #[arg(long, value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// A pipeline to compare (repeatable; at least one)
    #[arg(long, short = 's', value_name = "PIPELINE", required = true)]
    pub sampler: Vec<String>,
    /// A prompt (repeatable; default: "Once upon a time")
    #[arg(long, value_name = "TEXT", conflicts_with = "prompts")]
    pub prompt: Vec<String>,
    /// A file of prompts, one per line (empty lines are skipped)
    #[arg(long, value_name = "FILE")]
    pub prompts: Option<PathBuf>,
    /// Continuations per prompt and pipeline (sample j uses seed --seed + j)
    #[arg(long, default_value_t = 8, value_name = "S", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub samples: u64,
    /// The first sample's seed
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Most tokens per continuation
    #[arg(long = "max-tokens", short = 'n', default_value_t = DEFAULT_MAX_TOKENS, value_name = "N")]
    pub max_tokens: usize,
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load: model::LoadArgs,
    /// Print the report as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Also draw quality against diversity, one point per pipeline, into this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Plugin libraries.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Why continuations ended, counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Finishes {
    /// At an EOS token.
    pub eos: usize,
    /// At a stop string.
    pub stop: usize,
    /// At `--max-tokens` or the end of the context.
    pub length: usize,
}

/// What `sieve compare` reports for one pipeline. Serialized with exactly these keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineReport {
    /// The pipeline in canonical form.
    pub sampler: String,
    /// Continuations generated (prompts × samples).
    pub samples: usize,
    /// Distinct unigrams over all unigrams.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub distinct_1: f64,
    /// Distinct bigrams over all bigrams.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub distinct_2: f64,
    /// Distinct trigrams over all trigrams.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub distinct_3: f64,
    /// Share of 4-grams repeating an earlier 4-gram of the same continuation.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub repeated_4gram_rate: f64,
    /// Mean bigram Jaccard similarity of the continuations of one prompt.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub pairwise_overlap: f64,
    /// Mean log-probability of the generated tokens under the raw model (`null`: no token).
    #[serde(serialize_with = "sieve::outcome::json_opt_f64")]
    pub mean_logprob: Option<f64>,
    /// `exp(−mean_logprob)`.
    #[serde(serialize_with = "sieve::outcome::json_opt_f64")]
    pub perplexity: Option<f64>,
    /// Mean entropy of the raw distribution per step, nats.
    #[serde(serialize_with = "sieve::outcome::json_opt_f64")]
    pub mean_entropy: Option<f64>,
    /// Share of steps after which one finite candidate was left.
    #[serde(serialize_with = "sieve::outcome::json_opt_f64")]
    pub single_candidate_share: Option<f64>,
    /// Mean generated tokens per continuation.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub mean_length: f64,
    /// Finish reasons.
    pub finish: Finishes,
    /// Wall time per generated token over all continuations, ms (not deterministic).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub ms_per_token: f64,
}

/// Runs the command, writing the table or JSON to `out`.
///
/// # Errors
/// Usage: bad flags, model directory, prompts or pipelines; runtime: a model or stage failure.
pub fn run(
    args: &CompareArgs,
    registry: &Registry,
    out: &mut dyn std::io::Write,
) -> Result<(), Failure> {
    let (backend, precision) = args.load.resolve()?;
    for text in &args.sampler {
        pipeline::check(text, registry)?;
    }
    let texts = prompts(args)?;
    let files = model::open_files(args.model.as_deref())?;
    let context = files.dir.context_len();
    let mut encoded = Vec::with_capacity(texts.len());
    for text in &texts {
        let ids = model::prompt_tokens(&files, Some(text), None)?;
        // At least one token must fit after the prompt.
        if sieve_engine::check_prompt(&ids, 1, context).is_err() {
            return Err(Failure::usage(format!(
                "prompt {text:?} is {} tokens, leaving no room in the model's context of {context}",
                ids.len()
            )));
        }
        encoded.push(ids);
    }
    let samples = usize::try_from(args.samples).unwrap_or(usize::MAX);
    let mut open = model::load(files, backend, precision)?;
    let mut reports = Vec::with_capacity(args.sampler.len());
    for text in &args.sampler {
        let mut runs: Vec<Vec<Generation>> = Vec::with_capacity(encoded.len());
        let mut canonical = String::new();
        for prompt in &encoded {
            let mut group = Vec::with_capacity(samples);
            for j in 0..samples {
                let seed = args.seed.wrapping_add(j as u64);
                let cx = BuildContext {
                    seed,
                    vocab: Some(&open.files.vocab),
                };
                let mut compiled = pipeline::compile(text, registry, &cx)?;
                canonical = compiled.spec.to_string();
                let options = GenerateOptions {
                    max_tokens: args.max_tokens,
                    eos: open.files.dir.eos_ids(),
                    vocab: Some(&open.files.vocab),
                    step_stats: true,
                    ..GenerateOptions::default()
                };
                let generation = generate(
                    &mut open.model,
                    &open.files.tokenizer,
                    &mut compiled.pipeline,
                    prompt,
                    &options,
                    &mut |_| {},
                )
                .map_err(anyhow::Error::new)
                .runtime()?;
                group.push(generation);
            }
            runs.push(group);
        }
        reports.push(report(canonical, &runs, &open.files.dir.eos_ids()));
    }
    if let Some(path) = &args.plot {
        plot::write(path, &reports).usage()?;
    }
    let text = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({ "pipelines": reports }))
                .unwrap_or_default()
        )
    } else {
        table(&reports)
    };
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}

/// The prompts of `--prompt` or `--prompts`.
fn prompts(args: &CompareArgs) -> Result<Vec<String>, Failure> {
    let texts: Vec<String> = match &args.prompts {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--prompts {}: {e}", path.display())))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect(),
        None if args.prompt.is_empty() => vec![DEFAULT_PROMPT.to_string()],
        None => args.prompt.clone(),
    };
    if texts.is_empty() {
        return Err(Failure::usage(
            "--prompts: the file has no prompt (no non-empty line)",
        ));
    }
    Ok(texts)
}

/// The report of one pipeline from its continuations, grouped by prompt.
pub fn report(sampler: String, runs: &[Vec<Generation>], eos: &[u32]) -> PipelineReport {
    let all: Vec<&Generation> = runs.iter().flatten().collect();
    let text_of = |g: &Generation| -> Vec<u32> {
        let mut tokens = g.tokens.clone();
        if g.finish == FinishReason::Eos && tokens.last().is_some_and(|t| eos.contains(t)) {
            tokens.pop();
        }
        tokens
    };
    let groups: Vec<Vec<Vec<u32>>> = runs
        .iter()
        .map(|group| group.iter().map(text_of).collect())
        .collect();
    let texts: Vec<Vec<u32>> = groups.iter().flatten().cloned().collect();
    let steps = || all.iter().flat_map(|g| g.steps.iter());
    let mean_logprob = metrics::mean(steps().map(|s| s.logprob));
    let mut finish = Finishes::default();
    for g in &all {
        match g.finish {
            FinishReason::Eos => finish.eos += 1,
            FinishReason::Stop => finish.stop += 1,
            _ => finish.length += 1,
        }
    }
    let tokens: usize = all.iter().map(|g| g.tokens.len()).sum();
    let seconds: f64 = all.iter().map(|g| g.stats.total_time.as_secs_f64()).sum();
    PipelineReport {
        sampler,
        samples: all.len(),
        distinct_1: metrics::distinct_n(&texts, 1),
        distinct_2: metrics::distinct_n(&texts, 2),
        distinct_3: metrics::distinct_n(&texts, 3),
        repeated_4gram_rate: metrics::repeated_4gram_rate(&texts),
        pairwise_overlap: metrics::pairwise_overlap(&groups),
        mean_logprob,
        perplexity: mean_logprob.map(|m| (-m).exp()),
        mean_entropy: metrics::mean(steps().map(|s| s.entropy)),
        single_candidate_share: metrics::mean(steps().map(|s| {
            if s.survivors == 1 {
                1.0
            } else {
                0.0
            }
        })),
        mean_length: metrics::mean(all.iter().map(|g| g.tokens.len() as f64)).unwrap_or(0.0),
        finish,
        ms_per_token: if tokens == 0 {
            0.0
        } else {
            seconds * 1e3 / tokens as f64
        },
    }
}

/// The reports as an aligned table, one row per pipeline.
pub fn table(reports: &[PipelineReport]) -> String {
    let opt =
        |x: Option<f64>, digits: usize| x.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let header = [
        "pipeline",
        "dist-1",
        "dist-2",
        "dist-3",
        "rep-4",
        "overlap",
        "logprob",
        "ppl",
        "entropy",
        "single",
        "length",
        "eos/stop/len",
        "ms/tok",
    ];
    let rows: Vec<[String; 13]> = reports
        .iter()
        .map(|r| {
            [
                r.sampler.clone(),
                format!("{:.3}", r.distinct_1),
                format!("{:.3}", r.distinct_2),
                format!("{:.3}", r.distinct_3),
                format!("{:.3}", r.repeated_4gram_rate),
                format!("{:.3}", r.pairwise_overlap),
                opt(r.mean_logprob, 3),
                opt(r.perplexity, 2),
                opt(r.mean_entropy, 3),
                opt(r.single_candidate_share, 3),
                format!("{:.1}", r.mean_length),
                format!("{}/{}/{}", r.finish.eos, r.finish.stop, r.finish.length),
                format!("{:.2}", r.ms_per_token),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut parts = Vec::with_capacity(cells.len());
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            parts.push(if i == 0 {
                format!("{cell}{}", " ".repeat(pad))
            } else {
                format!("{}{cell}", " ".repeat(pad))
            });
        }
        let _ = writeln!(text, "{}", parts.join("  ").trim_end());
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_engine::{GenerationStats, StepStats};

    fn generation(tokens: &[u32], finish: FinishReason, logprobs: &[f64]) -> Generation {
        Generation {
            text: String::new(),
            tokens: tokens.to_vec(),
            finish,
            stats: GenerationStats::default(),
            steps: logprobs
                .iter()
                .map(|&logprob| StepStats {
                    logprob,
                    entropy: 1.0,
                    survivors: if logprob == 0.0 { 1 } else { 5 },
                })
                .collect(),
        }
    }

    #[test]
    fn a_report_by_hand() {
        // Two samples of one prompt; the second ends in EOS (id 9), which is no text.
        let runs = vec![vec![
            generation(&[1, 2, 3], FinishReason::Length, &[-1.0, -2.0, 0.0]),
            generation(&[1, 2, 9], FinishReason::Eos, &[-1.0, -2.0, -3.0]),
        ]];
        let r = report("p".into(), &runs, &[9]);
        assert_eq!(r.samples, 2);
        // Unigrams 1 2 3 | 1 2 → {1, 2, 3} of 5.
        assert_eq!(r.distinct_1, 0.6);
        // Bigrams 12 23 | 12 → 2 of 3; overlap: {12, 23} vs {12} → 1/2.
        assert!((r.distinct_2 - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.pairwise_overlap, 0.5);
        // Log-probabilities −1 −2 0 −1 −2 −3 → mean −1.5, perplexity e^1.5.
        assert_eq!(r.mean_logprob, Some(-1.5));
        assert!((r.perplexity.unwrap() - 1.5f64.exp()).abs() < 1e-12);
        assert_eq!(r.mean_entropy, Some(1.0));
        // One step of six left a single candidate.
        assert!((r.single_candidate_share.unwrap() - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(r.mean_length, 3.0);
        assert_eq!(
            r.finish,
            Finishes {
                eos: 1,
                stop: 0,
                length: 1
            }
        );
        let table = table(&[r]);
        assert!(table.starts_with("pipeline  dist-1"), "{table}");
        assert!(
            table.contains("0.600") && table.contains("1/0/1"),
            "{table}"
        );
    }
}
