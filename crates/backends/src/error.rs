//! The one error type of `sieve-backends`.

use std::path::PathBuf;

/// Everything that can go wrong while loading a model directory or running the model. (The
/// generation loop's own errors are `sieve_engine::Error`; this error becomes its
/// `Model` case.) The text side's errors are `sieve_text::Error`, wrapped as [`Error::Text`].
///
/// Messages name the file and, for weights, the tensor with the expected and found shape or
/// dtype, so the command line can print them as they are.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file of the text side (a missing or unreadable file, malformed JSON, an invalid
    /// `config.json` field, the tokenizer, the chat template): `sieve-text`'s error, with its
    /// message.
    #[error(transparent)]
    Text(#[from] sieve_text::Error),
    /// An index file lists a file outside the model directory (an absolute path or `..`).
    #[error("{}: `{entry}` is outside the model directory", path.display())]
    OutsideModelDir {
        /// The index file.
        path: PathBuf,
        /// The file name it lists.
        entry: String,
    },
    /// `config.json` names no architecture this crate implements.
    #[error("{}: unknown architecture {found}; supported: {}", path.display(), supported.join(", "))]
    UnknownArchitecture {
        /// The config file.
        path: PathBuf,
        /// What the file names (`architectures`, else `model_type`).
        found: String,
        /// The architectures this crate implements.
        supported: Vec<&'static str>,
    },
    /// A safetensors file (or its index) is truncated or corrupt.
    #[error("{}: not a valid safetensors file: {message}", path.display())]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// What the parser found wrong.
        message: String,
    },
    /// One tensor's entry in a safetensors header is inconsistent (unknown dtype, offsets
    /// out of the file, a byte length that does not match the dtype and shape).
    #[error("{}: tensor `{name}`: {message}", path.display())]
    BadTensor {
        /// The file.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// What is wrong, with the numbers.
        message: String,
    },
    /// A weight the architecture needs is not in the checkpoint.
    #[error("{}: missing tensor `{name}`", path.display())]
    MissingTensor {
        /// The file where it should be (the shard the index names, or the single file).
        path: PathBuf,
        /// The tensor name (Hugging Face naming).
        name: String,
    },
    /// A weight has another shape than the config implies.
    #[error("{}: tensor `{name}` has shape {found:?}, expected {expected:?}", path.display())]
    TensorShape {
        /// The file holding it.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// The shape the config implies.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// A weight is stored in a dtype this crate does not convert.
    #[error("{}: tensor `{name}` has dtype {found}, expected F32, F16 or BF16", path.display())]
    TensorDtype {
        /// The file holding it.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// The dtype in the file.
        found: String,
    },
    /// `tokenizer.json` cannot decode every id the model may emit: it has fewer tokens than
    /// `config.json`'s `vocab_size`, and the rows it lacks are not padding.
    #[error("{}: the tokenizer has {tokenizer} tokens but the model emits ids up to {} (`vocab_size` {vocab_size} in config.json){detail}", path.display(), vocab_size - 1)]
    TokenizerTooSmall {
        /// The tokenizer file.
        path: PathBuf,
        /// Tokens the tokenizer knows (its largest id plus one).
        tokenizer: usize,
        /// The model's vocabulary size.
        vocab_size: usize,
        /// Why the missing rows are not padding.
        detail: String,
    },
    /// A GGUF file that is truncated, corrupt or hostile (a count, length, type, shape or
    /// offset the file does not hold), or a metadata key of the wrong type: `sieve-gguf`'s
    /// error, with its message.
    #[error(transparent)]
    Gguf(#[from] sieve_gguf::Error),
    /// A GGUF file that is valid but describes what this crate does not load: an unknown
    /// architecture, or a metadata value or tensor the model families cannot express.
    #[error("{}: {what}: {message}", path.display())]
    UnsupportedGguf {
        /// The file.
        path: PathBuf,
        /// The key or tensor, e.g. "metadata `llama.rope.scaling.type`".
        what: String,
        /// What is not supported, and what is.
        message: String,
    },
    /// A directory without `config.json` whose GGUF files do not name one model.
    #[error("{}: {message}", path.display())]
    GgufDir {
        /// The directory.
        path: PathBuf,
        /// What it holds.
        message: String,
    },
    /// A backend name that is not `ndarray`, `flex` or `cuda`.
    #[error("unknown backend `{name}`; expected one of: ndarray, flex, cuda")]
    UnknownBackend {
        /// The name given.
        name: String,
    },
    /// A backend that this build or this machine cannot run.
    #[error("backend `{backend}` is unavailable: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        backend: &'static str,
        /// Why (not compiled in, no driver, no device).
        reason: String,
    },
    /// A weight dtype the backend cannot keep its weights in.
    #[error("--dtype {dtype} is not available on the {backend} backend, which computes in f32 tensors; use auto or f32")]
    DtypeUnavailable {
        /// The backend.
        backend: &'static str,
        /// The dtype asked for.
        dtype: &'static str,
    },
    /// A key/value cache dtype the backend cannot keep its cache in.
    #[error("--kv-cache {dtype} is not available on a backend that keeps its cache in f32 tensors (cuda); use f32")]
    KvDtypeUnavailable {
        /// The dtype asked for.
        dtype: &'static str,
    },
    /// The backend failed while computing or reading back a tensor.
    #[error("backend error: {message}")]
    Backend {
        /// What the backend reported.
        message: String,
    },
    /// A token id at or above the model's vocabulary size was fed to the model.
    #[error("token id {token} is out of range for a vocabulary of {vocab_size}")]
    TokenOutOfRange {
        /// The id.
        token: u32,
        /// The model's vocabulary size.
        vocab_size: usize,
    },
    /// The engine's error, with its message: what the one prompt check
    /// ([`sieve_engine::check_prompt`]) reports for tokens fed to the model,
    /// [`sieve_engine::Error::EmptyPrompt`] and [`sieve_engine::Error::ContextOverflow`]
    /// (against `max_position_embeddings`).
    #[error(transparent)]
    Engine(#[from] sieve_engine::Error),
}

impl Error {
    /// Whether the error is a bad file of the model directory (missing, not a regular file,
    /// malformed, inconsistent with the configuration): the user's input is at fault, not the
    /// machine. The command line exits with code 2 for these, 1 for the others (an I/O error,
    /// a backend failure, a bad token fed to a loaded model).
    pub fn is_bad_model_file(&self) -> bool {
        match self {
            Error::Text(e) => e.is_bad_model_file(),
            Error::OutsideModelDir { .. }
            | Error::UnknownArchitecture { .. }
            | Error::Safetensors { .. }
            | Error::BadTensor { .. }
            | Error::MissingTensor { .. }
            | Error::TensorShape { .. }
            | Error::TensorDtype { .. }
            | Error::TokenizerTooSmall { .. }
            | Error::UnsupportedGguf { .. }
            | Error::GgufDir { .. } => true,
            Error::Gguf(e) => !matches!(e, sieve_gguf::Error::Io { .. }),
            _ => false,
        }
    }
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for sieve_engine::Error {
    /// A model error inside the loop ([`sieve_engine::Error::Model`]), with its message; the
    /// engine's own error ([`Error::Engine`]) is given back as it is.
    fn from(e: Error) -> Self {
        match e {
            Error::Engine(e) => e,
            e => sieve_engine::Error::Model(Box::new(e)),
        }
    }
}
