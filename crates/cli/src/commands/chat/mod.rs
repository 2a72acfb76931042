//! `sieve chat`: a multi-turn conversation with a model through its chat template.
//!
//! - On a terminal ([`terminal`]): line editing and history (rustyline), each reply streamed
//!   as it is generated, `/` commands ([`slash`]) between turns; Ctrl-C stops a reply (what
//!   was written stays in the conversation), Ctrl-D quits.
//! - Piped ([`piped`]): one message per input line, one reply per output line (newlines in a
//!   reply written as `\n`, backslashes as `\\`), commands' answers on stderr — for scripts.
//! - Each reply is exactly `sieve generate --chat --messages` on the same conversation with
//!   the same pipeline and seed ([`session`]); the KV cache is kept between turns, so only
//!   the new part of each prompt is prefilled.
//!
//! Order of work, as in `generate`: `--backend` and `--sampler` are checked first, then the
//! model's small files (a model without a chat template stops here), then `--load`, and only
//! then are the weights loaded.

pub mod messages;
pub mod piped;
pub mod session;
pub mod slash;
pub mod terminal;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use sieve_core::{BuildContext, Registry};
use sieve_text::sampling;

use crate::error::{Failure, ResultExt};
use crate::plugins::PluginArgs;
use crate::{model, pipeline};

use session::{Session, Start};

/// Shown after `sieve chat --help`.
pub const EXAMPLES: &str = "Examples:
  sieve chat --model HuggingFaceTB/SmolLM2-135M-Instruct
  sieve chat --model ./Qwen3-0.6B --system \"Answer in one sentence.\" --sampler \"temp(0.7) | top_p(0.9)\" --seed 7
  printf 'Hi!\\nName three colors.\\n' | sieve chat --model ./Qwen3-0.6B --seed 7 -n 64

Inside the chat, /help lists the commands (/sampler, /trace, /seed, /system, /undo, /save,
/stats, /quit).";

/// The environment variable that pauses after each piece of streamed text, in milliseconds
/// (for demonstrations and for the pseudo-terminal test that interrupts a reply).
pub const DELAY_VAR: &str = "SIEVE_CHAT_TOKEN_DELAY_MS";

/// `sieve chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// A Hugging Face model directory or Hub name (org/name, optionally @revision) with a chat
    /// template
    #[arg(long, value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// The system message
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// The sampler pipeline (default: from generation_config.json, else
    /// "top_k(40) | top_p(0.95) | min_p(0.05) | temp(0.8)"); /sampler changes it
    #[arg(long, short = 's', value_name = "PIPELINE")]
    pub sampler: Option<String>,
    /// Seed of the random stages whose seed is -1, for every reply (default: random,
    /// shown by /stats); /seed changes it
    #[arg(long)]
    pub seed: Option<u64>,
    /// Most tokens of one reply
    #[arg(long = "max-tokens", short = 'n', value_name = "N")]
    pub max_tokens: Option<usize>,
    /// Continue the conversation in this JSON file (OpenAI's message format, as /save
    /// writes it); a last user message is answered first
    #[arg(long, value_name = "FILE.json")]
    pub load: Option<PathBuf>,
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load_args: model::LoadArgs,
    /// Threads the model computes on (default: one per core); the output does not depend on it
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Plugin libraries.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Runs the chat: on a terminal when stdin is one, else piped, writing replies to `out`.
///
/// # Errors
/// Usage: bad flags, a model without a chat template, a bad `--load` file; pipeline: a
/// `--sampler` that does not compile; runtime: loading fails. Failures inside the chat are
/// shown and the chat goes on.
pub fn run(args: &ChatArgs, registry: &Registry, out: &mut dyn Write) -> Result<(), Failure> {
    let (backend, precision) = args.load_args.resolve()?;
    model::threads(args.threads)?;
    let written = match &args.sampler {
        Some(text) => Some(pipeline::check(text, registry)?),
        None => None,
    };
    let files = model::open_files(args.model.as_deref())?;
    files.dir.chat_template().map_err(|e| {
        Failure::usage(format!(
            "{e}; sieve chat needs a model with a chat template (an instruct model, such as \
             HuggingFaceTB/SmolLM2-135M-Instruct)"
        ))
    })?;
    let parsed = match written {
        Some(parsed) => parsed,
        None => pipeline::check(
            &sampling::default_text(None, files.dir.generation()),
            registry,
        )?,
    };
    let seed = args.seed.unwrap_or_else(sampling::random_seed);
    // Build once now, so that a stage that cannot be built is reported before the weights load.
    pipeline::build(
        &parsed,
        registry,
        &BuildContext {
            seed,
            vocab: Some(&files.vocab),
        },
    )?;
    let mut conversation = match &args.load {
        Some(path) => messages::load(path).context("--load").usage()?,
        None => messages::Conversation::default(),
    };
    if args.system.is_some() {
        conversation.system.clone_from(&args.system);
    }
    let max_tokens = sampling::max_tokens(args.max_tokens, files.dir.generation());
    if max_tokens == 0 {
        return Err(Failure::usage("-n 0: a reply needs at least one token"));
    }
    let name = args
        .model
        .as_ref()
        .map_or_else(|| "embedded".to_string(), |m| m.display().to_string());
    let open = model::load(files, backend, precision)?;
    let delay = std::env::var(DELAY_VAR)
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis);
    let session = Session::new(Start {
        registry,
        open,
        parsed,
        seed,
        max_tokens,
        conversation,
        delay,
    });
    if std::io::stdin().is_terminal() {
        terminal::run(session, &name, backend.name(), out)
    } else {
        piped::run(session, out)
    }
}
