//! `sieve quantize IN OUT.gguf --type TYPE`: writes a GGUF model with its matrices quantized
//! into GGML blocks of TYPE with llama.cpp's reference rounding (what `llama-quantize --pure`
//! makes), with the tokenizer and chat template, so the output runs in sieve and in llama.cpp
//! alone. The file loaded back gives the logits that `--quantize TYPE` gives on IN (the same
//! rounding, the same kernels).
//!
//! IN is a GGUF model (a file, a directory holding one, the first of split shards) — every
//! metadata key is copied — or a Hugging Face directory (`config.json`, safetensors,
//! `tokenizer.json`), laid out as `convert_hf_to_gguf.py` lays it out with the tokenizer
//! metadata written from `tokenizer.json` / `tokenizer_config.json` / the chat template; or a
//! Hub name resolving to either, as `--model` takes. A tokenizer GGUF cannot state (one
//! llama.cpp would tokenize differently) is refused, naming what.

use std::path::{Path, PathBuf};

use clap::Args;
use sieve_backends::dtype::QuantType;
use sieve_backends::gguf::export::{quantize_gguf, quantize_hf};
use sieve_backends::ModelDir;

use crate::error::Failure;
use crate::model;

/// Examples shown after `sieve quantize --help`.
pub const EXAMPLES: &str = "Examples:
  sieve quantize SmolLM2-135M-Instruct.F16.gguf smollm2-q8_0.gguf --type q8_0
  sieve quantize ./Qwen2.5-0.5B-Instruct qwen2.5-q4_k.gguf --type q4_k
  sieve quantize HuggingFaceTB/SmolLM2-135M-Instruct smollm2-q8_0.gguf --type q8_0
  sieve quantize model-00001-of-00002.gguf model-q4_k.gguf --type q4_k";

/// `sieve quantize`.
#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The model to quantize: a Hugging Face directory (safetensors and tokenizer.json), a
    /// GGUF file (float or quantized: it is requantized), a directory holding one, the first
    /// of split shards, or a Hub name (org/name, org/name:FILE.gguf)
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// The GGUF file to write (one file)
    #[arg(value_name = "OUT.gguf")]
    pub output: PathBuf,
    /// The block type: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub ty: String,
}

/// Runs `sieve quantize`; the text printed names the file written, after a `note:` line per
/// difference the tokenizer metadata does not state (a Hugging Face input only).
///
/// # Errors
/// Usage: an unknown type, an input that is no model, a model or tokenizer GGUF cannot state,
/// an output that is one of the input's files, a matrix that cannot be quantized (a type
/// sieve does not read, a value that is not finite); runtime: reading or writing fails.
pub fn run(args: &QuantizeArgs) -> Result<String, Failure> {
    let ty: QuantType = args
        .ty
        .parse()
        .map_err(|e| Failure::usage(format!("--type: {e}")))?;
    let path = model::resolve(Some(&args.input))?;
    let at = |e: sieve_backends::Error| Failure::usage(format!("{}: {e}", path.display()));
    let dir = ModelDir::open(&path).map_err(at)?;
    let inputs: Vec<PathBuf> = match dir.gguf() {
        Some(gguf) => gguf
            .shards()
            .iter()
            .map(|s| s.path().to_path_buf())
            .collect(),
        None => std::fs::read_dir(dir.path())
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default(),
    };
    if inputs.iter().any(|p| same_file(p, &args.output)) {
        return Err(Failure::usage(format!(
            "{}: the output is the input (one of its files); write another file",
            args.output.display()
        )));
    }
    let failed = |e: sieve_backends::Error| {
        let message = anyhow::anyhow!("quantizing {}: {e}", path.display());
        let usage = match &e {
            sieve_backends::Error::UnsupportedGguf { .. } => true,
            sieve_backends::Error::Text(t) => t.is_bad_model_file(),
            _ => false,
        };
        match usage {
            true => Failure::Usage(message),
            false => Failure::Runtime(message),
        }
    };
    let mut text = String::new();
    match dir.gguf() {
        Some(gguf) => quantize_gguf(gguf, &args.output, ty).map_err(failed)?,
        None => {
            for note in quantize_hf(&dir, &args.output, ty).map_err(failed)? {
                text.push_str(&format!("note: {note}\n"));
            }
        }
    }
    text.push_str(&format!("wrote {} ({ty})\n", args.output.display()));
    Ok(text)
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
