//! `sieve quantize IN OUT.gguf --type TYPE`: writes a GGUF model with its matrices quantized
//! into GGML blocks of TYPE with llama.cpp's reference rounding (what `llama-quantize --pure`
//! makes), every metadata key copied — the tokenizer and chat template included — so the
//! output runs in sieve and in llama.cpp alone. The file loaded back gives the logits that
//! `--quantize TYPE` gives on IN (the same rounding, the same kernels).
//!
//! IN is a GGUF model (a file, a directory holding one, the first of split shards, or a Hub
//! name as `--model` takes). A Hugging Face directory is refused for now: GGUF's tokenizer
//! metadata cannot be written from it faithfully yet, so it is converted with llama.cpp's
//! `convert_hf_to_gguf.py` first (or run with `--quantize TYPE` directly).

use std::path::{Path, PathBuf};

use clap::Args;
use sieve_backends::dtype::QuantType;
use sieve_backends::gguf::export::quantize_gguf;
use sieve_backends::ModelDir;

use crate::error::Failure;
use crate::model;

/// Examples shown after `sieve quantize --help`.
pub const EXAMPLES: &str = "Examples:
  sieve quantize SmolLM2-135M-Instruct.F16.gguf smollm2-q8_0.gguf --type q8_0
  sieve quantize model-00001-of-00002.gguf model-q4_k.gguf --type q4_k";

/// `sieve quantize`.
#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The model to quantize: a GGUF file (float or quantized: it is requantized), a
    /// directory holding one, the first of split shards, or a Hub name (org/name:FILE.gguf)
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// The GGUF file to write (one file)
    #[arg(value_name = "OUT.gguf")]
    pub output: PathBuf,
    /// The block type: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub ty: String,
}

/// Runs `sieve quantize`; the text printed names the file written.
///
/// # Errors
/// Usage: an unknown type, an input that is no model or a Hugging Face directory, an output
/// that is the input, a matrix that cannot be quantized (a type sieve does not read, a value
/// that is not finite); runtime: writing fails.
pub fn run(args: &QuantizeArgs) -> Result<String, Failure> {
    let ty: QuantType = args
        .ty
        .parse()
        .map_err(|e| Failure::usage(format!("--type: {e}")))?;
    let path = model::resolve(Some(&args.input))?;
    let at = |e: sieve_backends::Error| Failure::usage(format!("{}: {e}", path.display()));
    let dir = ModelDir::open(&path).map_err(at)?;
    let Some(gguf) = dir.gguf() else {
        return Err(Failure::usage(format!(
            "{}: a Hugging Face directory is not quantized to a file yet (GGUF's tokenizer \
             metadata is not written from it); convert it with llama.cpp's \
             convert_hf_to_gguf.py first and quantize that file, or run it with --quantize {ty}",
            path.display()
        )));
    };
    if gguf
        .shards()
        .iter()
        .any(|s| same_file(s.path(), &args.output))
    {
        return Err(Failure::usage(format!(
            "{}: the output is the input; write another file",
            args.output.display()
        )));
    }
    quantize_gguf(gguf, &args.output, ty).map_err(|e| {
        let message = anyhow::anyhow!("quantizing {}: {e}", path.display());
        match e {
            sieve_backends::Error::UnsupportedGguf { .. } => Failure::Usage(message),
            _ => Failure::Runtime(message),
        }
    })?;
    Ok(format!("wrote {} ({ty})\n", args.output.display()))
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
