//! `sieve template`: prints the prompt a model's chat template makes of a conversation,
//! exactly (nothing added, not even a newline), or with `--json` the text and its tokens.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::chat;
use crate::error::Failure;
use crate::model;

/// Examples shown after `sieve template --help`.
pub const EXAMPLES: &str = "Examples:
  sieve template --model ./Qwen3-0.6B --messages chat.json
  sieve template --model ./Qwen3-0.6B --messages chat.json --kwargs '{\"enable_thinking\": false}' --json";

/// `sieve template`.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// with a chat template
    #[arg(long, value_name = "MODEL")]
    pub model: PathBuf,
    /// The conversation as a JSON file in OpenAI's format (a list of {"role", "content"}
    /// messages, or {"messages": […], "tools": […]})
    #[arg(long, value_name = "FILE.json")]
    pub messages: PathBuf,
    /// Do not end with the template's generation prompt (the start of the assistant's turn)
    #[arg(long)]
    pub no_generation_prompt: bool,
    /// Extra template variables as a JSON object, e.g. '{"enable_thinking": false}'
    #[arg(long, value_name = "JSON")]
    pub kwargs: Option<String>,
    /// Print {"text": …, "tokens": […]} instead of the text
    #[arg(long)]
    pub json: bool,
}

/// Runs the command and returns what it prints.
///
/// # Errors
/// Usage: a bad model directory, no template, a malformed conversation or template failure.
pub fn run(args: &TemplateArgs) -> Result<String, Failure> {
    let files = model::open_files(Some(&args.model))?;
    let chat_args = chat::ChatArgs {
        messages: Some(args.messages.clone()),
        ..chat::ChatArgs::default()
    };
    let conversation = chat::conversation(&chat_args, None)?;
    let (text, tokens) = chat::render(
        &files,
        &conversation,
        !args.no_generation_prompt,
        args.kwargs.as_deref(),
    )?;
    Ok(if args.json {
        format!("{}\n", json!({ "text": text, "tokens": tokens }))
    } else {
        text
    })
}
