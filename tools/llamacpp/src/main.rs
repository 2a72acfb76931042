//! `sieve-llamacpp`: llama.cpp (through the `llama-cpp-2` crate) beside sieve.
//!
//! A hand-run tool that makes the reference outputs sieve's GGUF tests compare against:
//! llama.cpp's token ids, logits, greedy text, quantized files and timings. It is a
//! standalone cargo project (not a workspace member) because building llama.cpp takes many
//! minutes; see `README.md` beside this file and `build.sh`.

mod args;
mod bench;
mod cputime;
mod engine;
mod error;
mod greedy;
mod info;
mod logits;
mod quantize;
mod tokenize;

use error::{Error, Result};

/// The usage text printed for `--help` and on a usage error.
const USAGE: &str = "\
usage: sieve-llamacpp COMMAND ...

commands:
  tokenize FILE.gguf CORPUS.json OUT.json   llama.cpp's ids for every text of CORPUS.json
                                            (a JSON array of strings), with and without
                                            special-token parsing
  logits FILE.gguf IDS OUT [--threads N] [--kv f32|f16] [--flash-attn on|off|auto]
                                            f32 logits at every position of IDS (comma-
                                            separated ids, or @FILE.json holding an array),
                                            raw little-endian [positions x vocab]
  greedy FILE.gguf PROMPT N [--chat] [--threads N] [--kv f32|f16] [--flash-attn ...]
                                            N greedy steps after PROMPT (special tokens parsed;
                                            --chat wraps it in llama.cpp's built-in rendering
                                            of the file's template), JSON on stdout
  quantize IN.gguf OUT.gguf TYPE [--pure] [--threads N]
                                            llama_model_quantize; TYPE: F32 F16 BF16 Q8_0
                                            Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_S Q3_K_M Q3_K_L
                                            Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K (Q3_K, Q4_K,
                                            Q5_K mean the _M recipes; --pure puts every
                                            matrix in TYPE)
  bench FILE.gguf [--prompt 256] [--gen 64] [--threads 2] [--reps 5]
                                            prefill tokens/s and decode ms/token, medians
                                            ([--kv f16|f32] [--flash-attn ...] as above)
  info                                      llama.cpp version and llama_print_system_info()

options anywhere: -v (keep llama.cpp's log on stderr)
--kv: the KV cache's element type (default f32 for logits and greedy, f16 for bench)
--flash-attn: llama.cpp's flash attention (default auto, llama.cpp's: on for the CPU);
  on the CPU it rounds Q/K/V to f16 even with an f32 KV cache, so off gives f32 attention
";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(argv) {
        Ok(()) => {}
        Err(Error::Usage(msg)) => {
            eprintln!("error: {msg}\n\n{USAGE}");
            std::process::exit(2);
        }
        Err(err) => {
            eprintln!("error: {err}");
            std::process::exit(1);
        }
    }
}

/// Dispatches on the command word.
fn run(argv: Vec<String>) -> Result<()> {
    let mut args = args::Args::new(argv);
    let verbose = args.flag("-v");
    if args.flag("--help") || args.flag("-h") {
        print!("{USAGE}");
        return Ok(());
    }
    let command = args.positional("COMMAND")?;
    let engine = engine::Engine::new(verbose)?;
    match command.as_str() {
        "tokenize" => tokenize::run(&engine, args),
        "logits" => logits::run(&engine, args),
        "greedy" => greedy::run(&engine, args),
        "quantize" => quantize::run(args),
        "bench" => bench::run(&engine, args),
        "info" => info::run(args),
        other => Err(Error::Usage(format!("unknown command `{other}`"))),
    }
}
