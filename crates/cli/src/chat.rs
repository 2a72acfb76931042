//! Chat prompts: a conversation (`--system` and `--prompt`, or `--messages FILE.json` in
//! OpenAI's format) rendered through the model's chat template (with `--kwargs` variables)
//! and encoded with the tokenizer's special tokens parsed, as transformers'
//! `apply_chat_template(tokenize=True)` does (no special token is added around it).

use std::path::PathBuf;

use clap::Args;
use sieve_backends::Message;

use crate::error::Failure;
use crate::model::ModelFiles;

/// The chat flags of `sieve generate`.
#[derive(Debug, Clone, Default, Args)]
pub struct ChatArgs {
    /// Apply the model's chat template to a conversation of --system (optional) and --prompt
    #[arg(long)]
    pub chat: bool,
    /// The system message of --chat
    #[arg(long, value_name = "TEXT", requires = "chat")]
    pub system: Option<String>,
    /// The conversation as a JSON file in OpenAI's format (a list of {"role", "content"}
    /// messages, or {"messages": […], "tools": […]}); implies --chat
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["prompt", "system"])]
    pub messages: Option<PathBuf>,
    /// Extra template variables as a JSON object, e.g. '{"enable_thinking": false}'
    #[arg(long, value_name = "JSON")]
    pub kwargs: Option<String>,
}

impl ChatArgs {
    /// Whether the prompt is a conversation to render (`--chat` or `--messages`).
    pub fn active(&self) -> bool {
        self.chat || self.messages.is_some()
    }
}

/// The conversation of `--messages FILE`, or of `--system` and `prompt`, as JSON text.
///
/// # Errors
/// Usage: an unreadable file, or no --prompt nor --messages.
pub fn conversation(args: &ChatArgs, prompt: Option<&str>) -> Result<String, Failure> {
    if let Some(path) = &args.messages {
        return std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--messages {}: {e}", path.display())));
    }
    let Some(prompt) = prompt else {
        return Err(Failure::usage(
            "--chat needs --prompt TEXT or --messages FILE.json",
        ));
    };
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(Message::new("system", system.as_str()));
    }
    messages.push(Message::new("user", prompt));
    serde_json::to_string(&messages).map_err(|e| Failure::usage(e.to_string()))
}

/// Renders `conversation` (JSON text) with the chat template of `files`, and encodes the text.
///
/// # Errors
/// Usage: no template, a malformed conversation or `kwargs`, a template that fails (its own
/// `raise_exception` included), a token beyond the model's vocabulary, an empty prompt.
pub fn render(
    files: &ModelFiles,
    conversation: &str,
    add_generation_prompt: bool,
    kwargs: Option<&str>,
) -> Result<(String, Vec<u32>), Failure> {
    // The template and the tokenizer fail with `sieve_text::Error`, the directory with
    // `sieve_backends::Error`; both are usage errors.
    fn at(e: impl std::fmt::Display) -> Failure {
        Failure::usage(e.to_string())
    }
    let template = files.dir.chat_template().map_err(at)?;
    let text = template
        .render_json(conversation, add_generation_prompt, kwargs)
        .map_err(at)?;
    let ids = files.tokenizer.encode(&text, false).map_err(at)?;
    let vocab = files.dir.vocab_size();
    if let Some(&bad) = ids.iter().find(|&&t| t as usize >= vocab) {
        return Err(Failure::usage(format!(
            "token {bad} is beyond the vocabulary ({vocab} tokens)"
        )));
    }
    Ok((text, ids))
}

/// The prompt tokens of `generate --chat`: the conversation rendered with a generation prompt.
///
/// # Errors
/// As [`conversation`] and [`render`], and usage for an empty prompt.
pub fn prompt_tokens(
    files: &ModelFiles,
    args: &ChatArgs,
    prompt: Option<&str>,
) -> Result<Vec<u32>, Failure> {
    let conversation = conversation(args, prompt)?;
    let (_, ids) = render(files, &conversation, true, args.kwargs.as_deref())?;
    if ids.is_empty() {
        return Err(Failure::usage("the chat template rendered no token"));
    }
    Ok(ids)
}
