//! `sieve logits`: the logits a model gives for a token sequence, at the last position or at
//! every position.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::error::{Failure, ResultExt};
use crate::model;

/// `sieve logits`.
#[derive(Debug, Args)]
pub struct LogitsArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// or `embedded` / `embedded-draft`
    #[arg(long, value_name = "MODEL")]
    pub model: PathBuf,
    /// The text to encode (with the tokenizer's special tokens, as transformers does)
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "tokens",
        required_unless_present = "tokens"
    )]
    pub prompt: Option<String>,
    /// Token ids, e.g. 1,2,3
    #[arg(long, value_name = "IDS")]
    pub tokens: Option<String>,
    /// Logits at every position (one list per position), not only the last
    #[arg(long)]
    pub all_positions: bool,
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load: model::LoadArgs,
    /// Print `{"tokens": [...], "logits": [...]}`
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
///
/// # Errors
/// Usage: bad flags, model directory, or tokens; runtime: a model failure.
pub fn run(args: &LogitsArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let (backend, precision) = args.load.resolve()?;
    let files = model::open_files(Some(&args.model))?;
    let tokens = model::prompt_tokens(&files, args.prompt.as_deref(), args.tokens.as_deref())?;
    let context = files.dir.context_len();
    if sieve_engine::check_prompt(&tokens, 0, context).is_err() {
        return Err(Failure::usage(format!(
            "{} tokens are more than the model's context of {context}",
            tokens.len()
        )));
    }
    let mut open = model::load(files, backend, precision)?;
    let rows: Vec<Vec<f32>> = if args.all_positions {
        open.model
            .forward_all(&tokens)
            .map_err(anyhow::Error::new)
            .runtime()?
    } else {
        vec![open
            .model
            .forward_last(&tokens)
            .map_err(anyhow::Error::new)
            .runtime()?]
    };
    let text = if args.json {
        // Non-finite logits as "inf" / "-inf" / "nan", like every `--json` output.
        let row_json = |row: &Vec<f32>| -> Vec<serde_json::Value> {
            row.iter()
                .map(|&x| {
                    sieve::outcome::json_float(&x, serde_json::value::Serializer)
                        .unwrap_or(serde_json::Value::Null)
                })
                .collect()
        };
        let logits = if args.all_positions {
            json!(rows.iter().map(row_json).collect::<Vec<_>>())
        } else {
            json!(row_json(&rows[0]))
        };
        format!("{}\n", json!({ "tokens": tokens, "logits": logits }))
    } else {
        let mut text = String::new();
        for (row, position) in rows.iter().zip(tokens.len() - rows.len()..) {
            let _ = writeln!(
                text,
                "position {position} (after token {}): top 10",
                tokens[position]
            );
            let mut order: Vec<usize> = (0..row.len()).collect();
            order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
            for &id in order.iter().take(10) {
                let piece = open
                    .files
                    .tokenizer
                    .decode(&[id as u32])
                    .unwrap_or_default();
                let _ = writeln!(text, "  {id:>7}  {:>10.4}  {piece:?}", row[id]);
            }
        }
        text
    };
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}
