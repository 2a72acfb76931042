//! `sieve serve`: the OpenAI-compatible server (`sieve-server`) on a model directory.
//!
//! Order of work: `--backend` and `--sampler` are checked, the directory's small files are
//! read (configuration, tokenizer, chat template), the default pipeline is compiled, the
//! socket is bound and `listening on http://HOST:PORT` printed on stderr; the weights load on
//! the scheduler's thread meanwhile (`/health` answers 503 until they have). A model that
//! fails to load stops the server with exit code 1.
//!
//! Requests without sampling fields run the pipeline `sieve generate` runs without
//! `--sampler` (`--sampler` here, else `generation_config.json`'s, else the fallback), with
//! the same default token budget, so one seed gives one text in both.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use sieve_core::{BuildContext, Registry};
use sieve_engine::serve::SchedulerConfig;
use sieve_engine::{BoxError, Detokenize, Scheduler};
use sieve_server::tools::ToolParser;
use sieve_server::{AppState, Defaults, ModelText, Settings};

use crate::commands::generate::{default_pipeline, DEFAULT_MAX_TOKENS, FALLBACK_PIPELINE};
use crate::error::{write_stderr, Failure};
use crate::plugins::PluginArgs;
use crate::{model, pipeline};

/// Shown after `sieve serve --help`.
pub const EXAMPLES: &str = "Examples:
  sieve serve --model embedded
  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \\
      -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 20, \"seed\": 7,
           \"sampler\": \"top_k(40) | temp(0.7)\"}'
  sieve serve --model ./SmolLM2-135M --port 8000 --parallel 8 --plugin ./libsieve_dry.so";

/// The most sequences `--parallel` may ask for.
pub const MAX_PARALLEL: usize = 1024;

/// `sieve serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A Hugging Face model directory, or `embedded` (default)
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// The address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port to listen on (0: any free port; the one bound is printed)
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The most sequences decoded at once (a request of n choices takes n)
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub parallel: usize,
    /// The most requests waiting to start; more are answered 503 with Retry-After
    #[arg(long = "max-queue", value_name = "N", default_value_t = 256)]
    pub max_queue: usize,
    /// The most prompt tokens read in one step while other requests decode
    #[arg(long = "prefill-chunk", value_name = "N", default_value_t = 512)]
    pub prefill_chunk: usize,
    /// The pipeline of requests that set no sampling field (default: from
    /// generation_config.json, else "top_k(40) | top_p(0.95) | min_p(0.05) | temp(0.8)")
    #[arg(long, short = 's', value_name = "PIPELINE")]
    pub sampler: Option<String>,
    /// ndarray, flex or cuda (cuda needs the `cuda` build feature and a GPU)
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub precision: model::PrecisionArgs,
    /// Require `Authorization: Bearer KEY` on every route but /health and /metrics
    #[arg(long = "api-key", value_name = "KEY")]
    pub api_key: Option<String>,
    /// The model's name in requests and /v1/models (default: --model as given)
    #[arg(long = "served-model-name", value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// The largest request body accepted, in bytes (larger: 413)
    #[arg(long = "max-body", value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_body: usize,
    /// How chat answers to requests with `tools` are searched for tool calls: auto (hermes
    /// when the chat template mentions <tool_call>, else json), hermes, json or none
    #[arg(long = "tool-call-parser", value_name = "NAME", default_value = "auto")]
    pub tool_call_parser: String,
    /// Plugin libraries (their stages may be named in requests).
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Runs the server until Ctrl-C or SIGTERM.
///
/// # Errors
/// Usage: bad flags, model directory or pipeline; runtime: the address cannot be bound, the
/// model does not load.
pub fn run(args: &ServeArgs, registry: Registry) -> Result<(), Failure> {
    let backend = model::backend(args.backend.as_deref())?;
    let precision = model::precision(&args.precision, backend)?;
    if let Some(text) = &args.sampler {
        pipeline::check(text, &registry)?;
    }
    if args.parallel == 0 || args.parallel > MAX_PARALLEL {
        return Err(Failure::usage(format!(
            "--parallel {}: give between 1 and {MAX_PARALLEL}",
            args.parallel
        )));
    }
    if args.prefill_chunk == 0 {
        return Err(Failure::usage("--prefill-chunk: give at least 1"));
    }
    let tool_parser: ToolParser = args
        .tool_call_parser
        .parse()
        .map_err(|e| Failure::usage(format!("--tool-call-parser: {e}")))?;
    let files = model::open_files(args.model.as_deref())?;
    let generation = files.dir.generation().clone();
    let default = match &args.sampler {
        Some(text) => text.clone(),
        None => default_pipeline(&generation).unwrap_or_else(|| FALLBACK_PIPELINE.to_string()),
    };
    let cx = BuildContext {
        seed: 0,
        vocab: Some(&files.vocab),
    };
    pipeline::compile(&default, &registry, &cx)?;
    let name = args.served_model_name.clone().unwrap_or_else(|| {
        args.model
            .as_deref()
            .map_or_else(|| "embedded".to_string(), |m| m.display().to_string())
    });
    let dir = files.dir.clone();
    let tokenizer = Arc::new(files.tokenizer);
    let vocab = Arc::new(files.vocab);
    let text = ModelText {
        name: name.clone(),
        tokenizer: Arc::clone(&tokenizer),
        vocab: Arc::clone(&vocab),
        vocab_size: files.dir.vocab_size(),
        context: files.dir.context_len(),
        eos: files.dir.eos_ids(),
        chat_template: files.dir.chat_template().map_err(|e| e.to_string()),
    };
    let config = SchedulerConfig {
        parallel: args.parallel,
        max_queue: args.max_queue,
        prefill_chunk: args.prefill_chunk,
    };
    let detokenizer: Arc<dyn Detokenize + Send + Sync> = tokenizer;
    let load = move || {
        dir.load_with_progress(backend, precision.weights, |_, _| {})
            .and_then(|mut model| {
                model.set_kv_dtype(precision.kv)?;
                Ok(model)
            })
            .map_err(|e| Box::new(e) as BoxError)
    };
    let scheduler = Scheduler::start(load, detokenizer, Some(vocab), config)
        .map_err(|e| Failure::Runtime(e.into()))?;
    let defaults = Defaults {
        pipeline: default,
        generation,
    };
    let settings = Settings {
        api_key: args.api_key.clone(),
        max_body_bytes: args.max_body,
        default_max_tokens: DEFAULT_MAX_TOKENS,
        tool_parser,
    };
    let state = AppState::new(text, registry, defaults, scheduler, settings);
    let announce = |addr: std::net::SocketAddr| {
        write_stderr(&format!(
            "sieve serve: listening on http://{addr} (model {name}, backend {})\n",
            backend.name()
        ))
        .map_err(|e| sieve_server::Error::Unavailable(e.message()))
    };
    sieve_server::run(&args.host, args.port, state, announce)
        .map_err(|e| Failure::Runtime(e.into()))
}
