//! Loading a GGUF and making a context: the parts every command shares.

use std::num::NonZeroU32;

use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use crate::args::Args;
use crate::error::{llama, Error, Result};

/// The initialised llama.cpp backend (one per process).
pub struct Engine {
    backend: LlamaBackend,
}

/// How a context is made: size, threads and the KV-cache element type.
pub struct ContextSpec {
    /// Context length in tokens.
    pub n_ctx: u32,
    /// Logical and physical batch size (tokens per `llama_decode`).
    pub n_batch: u32,
    /// Threads for both single-token and batch decoding.
    pub threads: i32,
    /// `true`: f32 K/V (closest to an exact reference); `false`: llama.cpp's default f16.
    pub kv_f32: bool,
    /// Flash attention: llama.cpp's `auto` (its default: on for the CPU), forced on or off.
    pub flash_attn: FlashAttn,
}

/// `--flash-attn`: whether llama.cpp's context uses its fused (flash) attention kernel.
///
/// On the CPU, ggml's flash attention converts Q and an f32 K/V to f16 and accumulates the
/// value rows in f16, whatever the KV cache type; with it off, attention is computed in f32
/// (with an f32 KV cache). The logits fixtures take `Off` so that they measure the weights'
/// formats, not this rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashAttn {
    /// llama.cpp decides (`LLAMA_FLASH_ATTN_TYPE_AUTO`, the library's default).
    Auto,
    /// Always the flash attention kernel.
    On,
    /// Never: the plain soft-max attention graph.
    Off,
}

impl FlashAttn {
    /// Reads `auto`, `on` or `off`.
    pub fn parse(word: &str) -> Result<Self> {
        match word {
            "auto" => Ok(FlashAttn::Auto),
            "on" => Ok(FlashAttn::On),
            "off" => Ok(FlashAttn::Off),
            other => Err(Error::Usage(format!(
                "--flash-attn: `{other}` is not on, off or auto"
            ))),
        }
    }

    /// llama.cpp's value for `llama_context_params.flash_attn_type`.
    fn policy(self) -> llama_cpp_sys_2::llama_flash_attn_type {
        match self {
            FlashAttn::Auto => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_AUTO,
            FlashAttn::On => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED,
            FlashAttn::Off => llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED,
        }
    }
}

impl ContextSpec {
    /// Reads `--threads N` (default `default_threads`, else all cores), `--kv f32|f16`
    /// (default `default_kv`) and `--flash-attn on|off|auto` (default `auto`, llama.cpp's);
    /// the caller sets the sizes once it knows the token counts.
    pub fn from_args(
        args: &mut Args,
        default_threads: Option<i32>,
        default_kv: &str,
    ) -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let default_threads = default_threads.unwrap_or_else(|| i32::try_from(cores).unwrap_or(1));
        let threads: i32 = args.number("--threads", default_threads)?;
        if threads < 1 {
            return Err(Error::Usage("--threads must be at least 1".into()));
        }
        let kv = args
            .option("--kv")?
            .unwrap_or_else(|| default_kv.to_string());
        let kv_f32 = match kv.as_str() {
            "f32" => true,
            "f16" => false,
            other => return Err(Error::Usage(format!("--kv: `{other}` is not f32 or f16"))),
        };
        let flash_attn = match args.option("--flash-attn")? {
            None => FlashAttn::Auto,
            Some(word) => FlashAttn::parse(&word)?,
        };
        Ok(ContextSpec {
            n_ctx: 0,
            n_batch: 0,
            threads,
            kv_f32,
            flash_attn,
        })
    }
}

impl Engine {
    /// Initialises llama.cpp; its log goes to stderr only when `verbose`.
    pub fn new(verbose: bool) -> Result<Self> {
        let mut backend = LlamaBackend::init().map_err(llama("backend init"))?;
        if !verbose {
            backend.void_logs();
        }
        Ok(Engine { backend })
    }

    /// Loads a GGUF file onto the CPU (memory-mapped, llama.cpp's defaults).
    pub fn load(&self, path: &str) -> Result<LlamaModel> {
        self.load_with(path, false)
    }

    /// Loads only the vocabulary of a GGUF file (no tensors needed: a tokenizer-only GGUF).
    pub fn load_vocab(&self, path: &str) -> Result<LlamaModel> {
        self.load_with(path, true)
    }

    fn load_with(&self, path: &str, vocab_only: bool) -> Result<LlamaModel> {
        if !std::path::Path::new(path).is_file() {
            return Err(Error::Usage(format!("{path}: no such file")));
        }
        let params = LlamaModelParams::default().with_vocab_only(vocab_only);
        LlamaModel::load_from_file(&self.backend, path, &params)
            .map_err(|e| Error::Llama(format!("loading {path}: {e}")))
    }

    /// Makes a context for `model` as `spec` says.
    pub fn context<'m>(
        &self,
        model: &'m LlamaModel,
        spec: &ContextSpec,
    ) -> Result<LlamaContext<'m>> {
        let n_ctx = NonZeroU32::new(spec.n_ctx.max(16));
        let mut params = LlamaContextParams::default()
            .with_n_ctx(n_ctx)
            .with_n_batch(spec.n_batch.max(16))
            .with_n_ubatch(spec.n_batch.max(16))
            .with_n_threads(spec.threads)
            .with_n_threads_batch(spec.threads)
            .with_flash_attention_policy(spec.flash_attn.policy());
        if spec.kv_f32 {
            params = params
                .with_type_k(KvCacheType::F32)
                .with_type_v(KvCacheType::F32);
        }
        model
            .new_context(&self.backend, params)
            .map_err(llama("new context"))
    }
}

/// Decodes `ids` at positions `start..` in one batch on sequence 0; logits are kept for every
/// position when `all_logits`, else only for the last.
pub fn decode(
    ctx: &mut LlamaContext<'_>,
    ids: &[LlamaToken],
    start: i32,
    all_logits: bool,
) -> Result<()> {
    let mut batch = LlamaBatch::new(ids.len().max(1), 1);
    for (i, &id) in ids.iter().enumerate() {
        let pos = start + i32::try_from(i).map_err(|_| Error::Usage("too many ids".into()))?;
        let keep = all_logits || i + 1 == ids.len();
        batch.add(id, pos, &[0], keep).map_err(llama("batch"))?;
    }
    ctx.decode(&mut batch).map_err(llama("decode"))
}

/// The index of the largest logit; the first one on ties (llama.cpp's greedy rule).
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best
}

/// Checks that every id is inside the model's vocabulary.
pub fn check_ids(model: &LlamaModel, ids: &[LlamaToken]) -> Result<()> {
    let n_vocab = model.n_vocab();
    for (i, id) in ids.iter().enumerate() {
        if id.0 < 0 || id.0 >= n_vocab {
            return Err(Error::Usage(format!(
                "id {} at index {i} is outside the vocabulary (0..{n_vocab})",
                id.0
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_of_equal_maxima() {
        assert_eq!(argmax(&[0.0, 2.0, 1.0, 2.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
        assert_eq!(argmax(&[f32::NEG_INFINITY, -1.0]), 1);
    }

    #[test]
    fn flash_attention_reads_on_off_auto_and_defaults_to_llama_cpp_s_auto() {
        let words = |w: &[&str]| Args::new(w.iter().map(|s| s.to_string()).collect());
        let spec = ContextSpec::from_args(&mut words(&["--flash-attn", "off"]), None, "f32");
        assert_eq!(spec.unwrap().flash_attn, FlashAttn::Off);
        let spec = ContextSpec::from_args(&mut words(&["--flash-attn", "on"]), None, "f32");
        assert_eq!(spec.unwrap().flash_attn, FlashAttn::On);
        let spec = ContextSpec::from_args(&mut words(&[]), None, "f32");
        assert_eq!(spec.unwrap().flash_attn, FlashAttn::Auto);
        let bad = ContextSpec::from_args(&mut words(&["--flash-attn", "yes"]), None, "f32");
        assert!(matches!(bad, Err(Error::Usage(m)) if m.contains("yes")));
        assert_eq!(
            FlashAttn::Off.policy(),
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
        );
    }
}
