//! Opening the model a command runs on: a Hugging Face directory (`--model DIR`), a Hub name
//! (`--model org/name[@revision][:FILE.gguf]`, from the Hugging Face cache or downloaded into
//! it: [`crate::hub`]), or one of the models embedded in the binary ([`crate::embedded`]: the
//! default, or `--model embedded` / `--model embedded-draft`); and `--backend`.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sieve_backends::{BackendKind, KvDtype, LoadedModel, ModelDir, Tokenizer, WeightDtype};
use sieve_core::Vocab;

use crate::embedded;
use crate::error::{Failure, ResultExt};

/// The backend used when `--backend` is not given: the faster CPU backend on the 135M-shaped
/// benchmark (see the README's model section).
pub const DEFAULT_BACKEND: BackendKind = BackendKind::Flex;

/// A model directory whose small files are read (configuration, generation defaults,
/// tokenizer) and whose weights are not: enough to tokenize a prompt and to build stages that
/// need the vocabulary, before the slow part.
pub struct ModelFiles {
    /// The directory (config, generation config).
    pub dir: ModelDir,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// Every token's bytes and the EOS ids, for stages that need them.
    pub vocab: Vocab,
}

/// A model ready to run: its files and its weights on a backend.
pub struct OpenModel {
    /// Configuration, tokenizer and vocabulary.
    pub files: ModelFiles,
    /// The weights on the chosen backend.
    pub model: LoadedModel,
}

/// Parses `--backend` and checks that the backend can run here.
///
/// # Errors
/// Usage: an unknown name (the message lists the known ones), or a backend not compiled in or
/// without its device.
pub fn backend(name: Option<&str>) -> Result<BackendKind, Failure> {
    let kind = match name {
        None => DEFAULT_BACKEND,
        Some(name) => name
            .parse::<BackendKind>()
            .map_err(|e| Failure::usage(format!("--backend: {e}")))?,
    };
    kind.check_available()
        .map_err(|e| Failure::usage(format!("--backend {}: {e}", kind.name())))?;
    Ok(kind)
}

/// `--backend`, `--dtype` and `--kv-cache`: where the model runs and the element types its
/// weights and key/value cache are kept in (the same options on every command that loads a
/// model: `generate`, `serve`, `logits`, `compare`, `bench model`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LoadArgs {
    /// ndarray, flex or cuda (cuda needs the `cuda` build feature and a GPU)
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Element type the weight matrices are kept in: auto (the checkpoint's own, default),
    /// f32, bf16 or f16 (converted once at load; bf16/f16 need a CPU backend)
    #[arg(long, value_name = "TYPE")]
    pub dtype: Option<String>,
    /// Element type of the key/value cache: f32 (default, exact), bf16 or f16 (half the
    /// memory and the bytes attention reads; keys and values rounded as they are stored;
    /// CPU backends)
    #[arg(long = "kv-cache", value_name = "TYPE")]
    pub kv_cache: Option<String>,
    /// Quantize the weight matrices at load into GGML blocks of TYPE with llama.cpp's
    /// rounding: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k (CPU backends;
    /// not with --dtype)
    #[arg(long, value_name = "TYPE")]
    pub quantize: Option<String>,
}

impl LoadArgs {
    /// The backend and the precision asked for, each checked.
    ///
    /// # Errors
    /// Usage: an unknown or unavailable backend, an unknown element type, or one the backend
    /// cannot keep.
    pub fn resolve(&self) -> Result<(BackendKind, Precision), Failure> {
        let backend = backend(self.backend.as_deref())?;
        let precision = precision(self, backend)?;
        Ok((backend, precision))
    }
}

/// What [`LoadArgs`]' `--dtype` and `--kv-cache` asked for, checked against the backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct Precision {
    /// The weight matrices' element type.
    pub weights: WeightDtype,
    /// The key/value cache's element type.
    pub kv: KvDtype,
}

/// Reads `--dtype` (`None` is `auto`, the checkpoint's own) and `--kv-cache` (`None` is
/// `f32`) for `backend`.
///
/// # Errors
/// Usage: an unknown name, or a type the backend cannot keep weights or its cache in.
pub fn precision(args: &LoadArgs, backend: BackendKind) -> Result<Precision, Failure> {
    let mut weights: WeightDtype = parsed("--dtype", args.dtype.as_deref())?;
    if let Some(name) = args.quantize.as_deref() {
        weights = quantize(name, weights, backend)?;
    }
    let kv: KvDtype = parsed("--kv-cache", args.kv_cache.as_deref())?;
    let unavailable = |e: sieve_backends::Error| Failure::usage(e.to_string());
    backend.check_dtype(weights).map_err(unavailable)?;
    backend.check_kv_dtype(kv).map_err(unavailable)?;
    Ok(Precision { weights, kv })
}

/// `--quantize NAME`: the block type, checked against `--dtype` (only `auto` goes with it)
/// and `backend` (the quantized kernels are the CPU backends').
///
/// # Errors
/// Usage: an unknown type (the message lists the known ones), `--dtype` other than `auto`,
/// or a backend that computes in `f32` tensors (CUDA).
fn quantize(name: &str, dtype: WeightDtype, backend: BackendKind) -> Result<WeightDtype, Failure> {
    let ty: sieve_backends::dtype::QuantType = name
        .parse()
        .map_err(|e| Failure::usage(format!("--quantize: {e}")))?;
    if dtype != WeightDtype::Auto {
        return Err(Failure::usage(format!(
            "--quantize {ty} sets the matrices' type; it does not go with --dtype {dtype} (leave --dtype out)"
        )));
    }
    if backend.kernels() != sieve_backends::model::Kernels::Host {
        return Err(Failure::usage(format!(
            "--quantize {ty} is not available on the {} backend, which computes in f32 tensors; the quantized kernels run on the CPU backends (flex, ndarray)",
            backend.name()
        )));
    }
    Ok(WeightDtype::Quant(ty))
}

/// The value of `option` named `name`, or the type's default when the option is absent.
///
/// # Errors
/// Usage: a name the type does not know, with the option's name before its message.
fn parsed<T>(option: &str, name: Option<&str>) -> Result<T, Failure>
where
    T: std::str::FromStr + Default,
    T::Err: std::fmt::Display,
{
    name.map_or_else(
        || Ok(T::default()),
        |name| {
            name.parse()
                .map_err(|e| Failure::usage(format!("{option}: {e}")))
        },
    )
}

/// Applies `--threads` (before anything computes): `None` keeps one thread per core.
///
/// # Errors
/// Usage: 0 threads, or more than 1024.
pub fn threads(threads: Option<usize>) -> Result<(), Failure> {
    match threads {
        None => Ok(()),
        Some(n) if (1..=1024).contains(&n) => sieve_backends::set_threads(n)
            .map_err(|e| Failure::Runtime(anyhow::anyhow!("--threads {n}: {e}"))),
        Some(n) => Err(Failure::usage(format!(
            "--threads {n}: give between 1 and 1024 threads"
        ))),
    }
}

/// The path `--model` names: a local file or directory (which always wins), an embedded
/// model's directory, or a Hub name's snapshot in the Hugging Face cache (downloaded first
/// when it is not there and the network is allowed); the embedded target when `None`.
///
/// # Errors
/// Usage: a Hub name neither cached nor downloadable ([`crate::hub::resolve`]); runtime: an
/// embedded model that cannot be written out.
pub fn resolve(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    match dir.map(|d| (d, embedded::named(d))) {
        Some((_, Some(model))) => model.dir().runtime(),
        Some((dir, None)) => crate::hub::resolve(dir),
        None => embedded::TARGET.dir().runtime(),
    }
}

/// Reads the configuration, generation defaults and tokenizer of the model `dir` names (see
/// [`resolve`]; the embedded model when `None`), not the weights.
///
/// # Errors
/// Usage: a directory that is missing, malformed, or of an unsupported architecture; a Hub
/// name that cannot be resolved.
pub fn open_files(dir: Option<&Path>) -> Result<ModelFiles, Failure> {
    let (path, dir) = open_at(dir)?;
    let at = |e: sieve_backends::Error| Failure::usage(format!("--model {}: {e}", path.display()));
    let tokenizer = dir.tokenizer().map_err(at)?;
    let vocab = dir.vocab(&tokenizer);
    Ok(ModelFiles {
        dir,
        tokenizer,
        vocab,
    })
}

/// Reads the configuration of the model `dir` names, as [`open_files`] does, without the
/// tokenizer: for a command that feeds the model token ids and reads nothing back as text
/// (`bench model` without `--prompt`), which then does not hold the tokenizer's tables (tens
/// of megabytes for a 150 000-token vocabulary).
///
/// # Errors
/// As [`open_files`].
pub fn open_dir(dir: Option<&Path>) -> Result<ModelDir, Failure> {
    open_at(dir).map(|(_, dir)| dir)
}

/// The path `dir` resolves to ([`resolve`]) and the [`ModelDir`] opened there.
fn open_at(dir: Option<&Path>) -> Result<(PathBuf, ModelDir), Failure> {
    let path = resolve(dir)?;
    let at = |e: sieve_backends::Error| Failure::usage(format!("--model {}: {e}", path.display()));
    let dir = ModelDir::open(&path).map_err(at)?;
    Ok((path, dir))
}

/// Loads the weights of `files` onto `backend` in `precision`, with a progress bar on a
/// terminal.
///
/// # Errors
/// Usage (exit 2): a bad weights file (see `sieve_backends::Error::is_bad_model_file`);
/// runtime: any other failure to load.
pub fn load(
    files: ModelFiles,
    backend: BackendKind,
    precision: Precision,
) -> Result<OpenModel, Failure> {
    let model = load_dir(&files.dir, backend, precision)?;
    Ok(OpenModel { files, model })
}

/// [`load`] of a [`ModelDir`] alone (see [`open_dir`]).
///
/// # Errors
/// As [`load`].
pub fn load_dir(
    dir: &ModelDir,
    backend: BackendKind,
    precision: Precision,
) -> Result<LoadedModel, Failure> {
    let bar = weights_bar();
    let drawn = bar.clone();
    let model = dir
        .load_with_progress(backend, precision.weights, move |done, total| {
            drawn.set_length(total);
            drawn.set_position(done);
        })
        .and_then(|mut model| {
            model.set_kv_dtype(precision.kv)?;
            Ok(model)
        })
        .map_err(|e| {
            let message = anyhow::anyhow!("loading {}: {e}", dir.path().display());
            if e.is_bad_model_file() {
                Failure::Usage(message)
            } else {
                Failure::Runtime(message)
            }
        });
    bar.finish_and_clear();
    model
}

/// A progress bar of the weights read, drawn on stderr only when it is a terminal.
fn weights_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "loading weights {bar:30} {binary_bytes}/{binary_total_bytes} {elapsed}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// The prompt's token ids (with the tokenizer's special tokens, such as BOS, as transformers
/// adds them), or the ids given with `--tokens`.
///
/// # Errors
/// Usage: a prompt the tokenizer cannot encode, an empty prompt, or ids beyond the vocabulary.
pub fn prompt_tokens(
    open: &ModelFiles,
    prompt: Option<&str>,
    tokens: Option<&str>,
) -> Result<Vec<u32>, Failure> {
    let vocab = open.dir.vocab_size();
    let ids = match (prompt, tokens) {
        (_, Some(tokens)) => crate::input::parse_history(tokens, vocab)
            .map_err(|e| Failure::usage(format!("--tokens: {e}")))?,
        (Some(prompt), None) => open
            .tokenizer
            .encode(prompt, true)
            .map_err(|e| Failure::usage(format!("--prompt: {e}")))?,
        (None, None) => return Err(Failure::usage("give --prompt TEXT or --tokens IDS")),
    };
    if ids.is_empty() {
        return Err(Failure::usage("no prompt token"));
    }
    if let Some(&bad) = ids.iter().find(|&&t| t as usize >= vocab) {
        return Err(Failure::usage(format!(
            "token {bad} is beyond the vocabulary ({vocab} tokens)"
        )));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_is_refused_on_cuda_and_with_a_dtype() {
        let q = quantize("Q4_K", WeightDtype::Auto, BackendKind::Flex).unwrap();
        assert_eq!(q.name(), "q4_k");
        let e = format!(
            "{:?}",
            quantize("q8_0", WeightDtype::Auto, BackendKind::Cuda).unwrap_err()
        );
        assert!(e.contains("cuda") && e.contains("f32 tensors"), "{e}");
        let e = format!(
            "{:?}",
            quantize("q8_0", WeightDtype::F16, BackendKind::Flex).unwrap_err()
        );
        assert!(e.contains("--dtype f16"), "{e}");
        let e = format!(
            "{:?}",
            quantize("int4", WeightDtype::Auto, BackendKind::Flex).unwrap_err()
        );
        assert!(e.contains("int4") && e.contains("q6_k"), "{e}");
    }
}
