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
//!
//! The API key comes from `--api-key`, else the trimmed contents of `--api-key-file`, else
//! the environment variable `SIEVE_API_KEY` (the last two keep it out of `ps`). The request
//! log (`sieve_server::log`) goes to stderr after the `listening on` line, as text or JSON
//! lines (`--log-format`), filtered by `RUST_LOG` (default: `info` for sieve's crates).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sieve_core::{BuildContext, Registry};
use sieve_engine::scheduler::SchedulerConfig;
use sieve_engine::{BoxError, Detokenize, Scheduler};
use sieve_server::routes::guard::AllowedOrigins;
use sieve_server::tools::ToolParser;
use sieve_server::work::WorkLimits;
use sieve_server::{AppState, ConnectionLimits, Defaults, ModelText, Settings};

use crate::error::{write_stderr, Failure};
use crate::plugins::PluginArgs;
use crate::{model, pipeline};
use sieve_text::sampling::{self, DEFAULT_MAX_TOKENS};

/// Shown after `sieve serve --help`.
pub const EXAMPLES: &str = "Examples:
  sieve serve --model embedded
  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \\
      -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 20, \"seed\": 7,
           \"sampler\": \"top_k(40) | temp(0.7)\"}'
  sieve serve --model ./SmolLM2-135M --port 8000 --parallel 8 --plugin ./libsieve_dry.so";

/// The most sequences `--parallel` may ask for.
pub const MAX_PARALLEL: usize = 1024;

/// The environment variable read for the API key when neither `--api-key` nor
/// `--api-key-file` is given.
pub const API_KEY_ENV: &str = "SIEVE_API_KEY";

/// The log filter when `RUST_LOG` is not set.
pub const DEFAULT_LOG_FILTER: &str = "warn,sieve_server=info,sieve_engine=info,sieve_cli=info";

/// `sieve serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A model: a Hugging Face directory, a GGUF file, or a Hub name (org/name, optionally
    /// @revision or :FILE.gguf; read from the Hugging Face cache, downloaded once: docs/hub.md),
    /// or `embedded` (default)
    #[arg(long, value_name = "MODEL")]
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
    /// `--backend`, `--dtype` and `--kv-cache`.
    #[command(flatten)]
    pub load: model::LoadArgs,
    /// Require `Authorization: Bearer KEY` on every route but /health and /metrics (see also
    /// --api-key-file and SIEVE_API_KEY, which `ps` does not show)
    #[arg(long = "api-key", value_name = "KEY")]
    pub api_key: Option<String>,
    /// Read the API key from this file (its contents, trimmed)
    #[arg(long = "api-key-file", value_name = "PATH", conflicts_with = "api_key")]
    pub api_key_file: Option<PathBuf>,
    /// Origins whose browser requests are answered, with CORS headers (comma-separated or
    /// repeated; `*`: any); other cross-origin requests get 403
    #[arg(long = "allowed-origins", value_name = "ORIGINS")]
    pub allowed_origins: Vec<String>,
    /// Seconds a client may take to send a request's headers, on a new connection or
    /// between kept-alive requests; the connection is closed after
    #[arg(long = "header-timeout", value_name = "SECS", default_value = "10", value_parser = seconds)]
    pub header_timeout: Duration,
    /// Seconds a client may take to send a request's body (408 after)
    #[arg(long = "body-timeout", value_name = "SECS", default_value = "30", value_parser = seconds)]
    pub body_timeout: Duration,
    /// Seconds a connection with no request in flight may stay silent before it is closed
    #[arg(long = "keep-alive-timeout", value_name = "SECS", default_value = "5", value_parser = seconds)]
    pub keep_alive_timeout: Duration,
    /// Seconds running requests may go on after Ctrl-C or SIGTERM; then the streams and
    /// connections left are closed and the server exits
    #[arg(long = "shutdown-timeout", value_name = "SECS", default_value = "10", value_parser = seconds)]
    pub shutdown_timeout: Duration,
    /// The most connections open at once; more wait to be accepted
    #[arg(long = "max-connections", value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// Requests prepared at once (chat template, tokenizer, pipeline build) off the HTTP
    /// threads (default: one per core)
    #[arg(long = "prepare-threads", value_name = "N")]
    pub prepare_threads: Option<usize>,
    /// Requests waiting to be prepared; one more gets 503 with Retry-After
    #[arg(long = "prepare-queue", value_name = "N", default_value_t = 64)]
    pub prepare_queue: usize,
    /// The request log on stderr: text or json (one object per line); RUST_LOG filters it
    #[arg(long = "log-format", value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
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

/// How the request log is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, the event's fields at the top level.
    Json,
}

/// Reads a number of seconds (`2`, `0.5`): finite and not negative.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{text}`: give seconds, 0 or more"))
}

/// The API key: `--api-key`, else `--api-key-file`'s trimmed contents, else `SIEVE_API_KEY`
/// (`env` reads it), else none.
///
/// # Errors
/// Usage (exit 2): an empty key, or a key file that cannot be read or is empty.
pub fn api_key(
    flag: Option<&str>,
    file: Option<&Path>,
    env: impl FnOnce(&str) -> Option<std::ffi::OsString>,
) -> Result<Option<String>, Failure> {
    let (key, source) = if let Some(key) = flag {
        (key.to_string(), "--api-key".to_string())
    } else if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--api-key-file {}: {e}", path.display())))?;
        (text, format!("--api-key-file {}", path.display()))
    } else if let Some(value) = env(API_KEY_ENV) {
        let text = value
            .into_string()
            .map_err(|_| Failure::usage(format!("{API_KEY_ENV} is not UTF-8")))?;
        (text, API_KEY_ENV.to_string())
    } else {
        return Ok(None);
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(Failure::usage(format!("{source}: the API key is empty")));
    }
    Ok(Some(key.to_string()))
}

/// Installs the request log's subscriber on stderr (once; a second call does nothing).
fn init_log(format: LogFormat) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}

/// Runs the server until Ctrl-C or SIGTERM.
///
/// # Errors
/// Usage: bad flags, model directory or pipeline; runtime: the address cannot be bound, the
/// model does not load.
pub fn run(args: &ServeArgs, registry: Registry) -> Result<(), Failure> {
    let (backend, precision) = args.load.resolve()?;
    // `--sampler` is parsed once, here, before anything slow.
    let written = match &args.sampler {
        Some(text) => Some(pipeline::check(text, &registry)?),
        None => None,
    };
    if args.parallel == 0 || args.parallel > MAX_PARALLEL {
        return Err(Failure::usage(format!(
            "--parallel {}: give between 1 and {MAX_PARALLEL}",
            args.parallel
        )));
    }
    if args.prefill_chunk == 0 {
        return Err(Failure::usage("--prefill-chunk: give at least 1"));
    }
    if args.max_queue == 0 {
        return Err(Failure::usage(
            "--max-queue: give at least 1 (a request waits in the queue before it starts)",
        ));
    }
    if args.prepare_threads == Some(0) {
        return Err(Failure::usage("--prepare-threads: give at least 1"));
    }
    if args.max_connections == 0 {
        return Err(Failure::usage("--max-connections: give at least 1"));
    }
    for (flag, value) in [
        ("--header-timeout", args.header_timeout),
        ("--body-timeout", args.body_timeout),
        ("--keep-alive-timeout", args.keep_alive_timeout),
    ] {
        if value.is_zero() {
            return Err(Failure::usage(format!("{flag}: give more than 0 seconds")));
        }
    }
    let api_key = api_key(
        args.api_key.as_deref(),
        args.api_key_file.as_deref(),
        |name| std::env::var_os(name),
    )?;
    let allowed_origins = AllowedOrigins::parse(&args.allowed_origins)
        .map_err(|e| Failure::usage(format!("--allowed-origins: {e}")))?;
    let tool_parser: ToolParser = args
        .tool_call_parser
        .parse()
        .map_err(|e| Failure::usage(format!("--tool-call-parser: {e}")))?;
    let files = model::open_files(args.model.as_deref())?;
    let generation = files.dir.generation().clone();
    let default = match written {
        Some(parsed) => parsed,
        None => sampling::default_pipeline(None, &generation, &registry)
            .map_err(|d| Failure::Pipeline(d.render(&sampling::default_text(None, &generation))))?,
    };
    let cx = BuildContext {
        seed: 0,
        vocab: Some(&files.vocab),
    };
    pipeline::build(&default, &registry, &cx)?;
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
        api_key,
        max_body_bytes: args.max_body,
        body_read_timeout: args.body_timeout,
        allowed_origins,
        connections: ConnectionLimits {
            header_read: args.header_timeout,
            keep_alive: args.keep_alive_timeout,
            shutdown: args.shutdown_timeout,
            max_connections: args.max_connections,
        },
        work: WorkLimits {
            threads: args
                .prepare_threads
                .unwrap_or_else(|| WorkLimits::default().threads),
            waiting: args.prepare_queue,
        },
        default_max_tokens: DEFAULT_MAX_TOKENS,
        tool_parser,
    };
    let state = AppState::new(text, registry, defaults, scheduler, settings);
    init_log(args.log_format);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use std::ffi::OsString;

    /// [`api_key`] with `SIEVE_API_KEY` set to `env` (or unset).
    fn key(
        flag: Option<&str>,
        file: Option<&Path>,
        env: Option<&'static str>,
    ) -> Result<Option<String>, Failure> {
        api_key(flag, file, move |name| {
            env.filter(|_| name == API_KEY_ENV).map(OsString::from)
        })
    }

    #[test]
    fn the_key_comes_from_the_flag_the_file_or_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "  from-file\n").unwrap();
        assert_eq!(key(None, None, None).unwrap(), None);
        let found = |flag, file, env| key(flag, file, env).unwrap().unwrap();
        assert_eq!(found(None, None, Some(" from-env ")), "from-env");
        assert_eq!(found(None, Some(&file), Some("from-env")), "from-file");
        assert_eq!(
            found(Some("from-flag"), None, Some("from-env")),
            "from-flag"
        );
    }

    #[test]
    fn an_empty_or_unreadable_key_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, " \n").unwrap();
        let missing = dir.path().join("missing");
        for (flag, file, env, says) in [
            (None, Some(empty.as_path()), None, "the API key is empty"),
            (None, Some(missing.as_path()), None, "--api-key-file"),
            (None, None, Some(" "), "SIEVE_API_KEY: the API key is empty"),
            (Some(""), None, None, "--api-key: the API key is empty"),
        ] {
            let failure = key(flag, file, env).unwrap_err();
            assert_eq!(failure.exit_code(), 2);
            assert!(failure.message().contains(says), "{}", failure.message());
        }
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let cli = Cli::try_parse_from(["sieve", "serve"].iter().chain(args))?;
        match cli.command {
            Command::Serve(a) => Ok(a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_new_flags_parse_with_their_defaults() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.header_timeout, Duration::from_secs(10));
        assert_eq!(a.body_timeout, Duration::from_secs(30));
        assert_eq!(a.keep_alive_timeout, Duration::from_secs(5));
        assert_eq!(a.shutdown_timeout, Duration::from_secs(10));
        assert_eq!(a.max_connections, 512);
        assert_eq!(a.log_format, LogFormat::Text);
        assert!(a.allowed_origins.is_empty());
        let a = parse(&[
            "--header-timeout",
            "0.5",
            "--shutdown-timeout",
            "0",
            "--allowed-origins",
            "https://a.test,https://b.test",
            "--allowed-origins",
            "*",
            "--log-format",
            "json",
        ])
        .unwrap();
        assert_eq!(a.header_timeout, Duration::from_millis(500));
        assert_eq!(a.shutdown_timeout, Duration::ZERO);
        assert_eq!(a.log_format, LogFormat::Json);
        assert_eq!(a.allowed_origins.len(), 2);
        for bad in [
            &["--header-timeout", "-1"][..],
            &["--body-timeout", "soon"],
            &["--log-format", "xml"],
            &["--api-key", "a", "--api-key-file", "f"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
