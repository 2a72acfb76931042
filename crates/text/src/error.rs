//! The one error type of `sieve-text`.

use std::path::PathBuf;

/// Everything that can go wrong while reading the text side of a model directory: its JSON
/// files, its tokenizer and its chat template.
///
/// Messages name the file (and, for JSON, the field), so a front end can print them as they
/// are. `sieve-backends` wraps this type in its own `Error::Text` with the same message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file the model directory must have is not there.
    #[error("missing file {}", path.display())]
    MissingFile {
        /// The path looked for.
        path: PathBuf,
    },
    /// A path of the model directory is not a regular file (a directory, FIFO, socket or
    /// device, also behind a symlink): it is refused before it is opened.
    #[error("{}: not a regular file", path.display())]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// A file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A JSON file is not valid JSON, or a field has the wrong type.
    #[error("{}: {}{message}", path.display(), field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
    Json {
        /// The file.
        path: PathBuf,
        /// The path of the offending field (`rope_scaling.factor`), when known.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// `config.json` parses but describes a model that cannot be built (see
    /// [`crate::ConfigJson::invalid`]).
    #[error("{}: {message}", path.display())]
    InvalidConfig {
        /// The config file.
        path: PathBuf,
        /// What is wrong (names the field).
        message: String,
    },
    /// `tokenizer.json` could not be loaded, or encoding/decoding failed.
    #[error("{}: tokenizer: {message}", path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The tokenizers crate's message.
        message: String,
    },
    /// The tokenizer metadata of a GGUF file (`tokenizer.ggml.*`) cannot be built into a
    /// tokenizer: inconsistent (lengths, duplicate tokens, ids past the vocabulary, merges
    /// naming unknown tokens) or naming a model or pre-tokenizer that is not supported.
    #[error("{}: {key}: {message}", path.display())]
    GgufTokenizer {
        /// The GGUF file.
        path: PathBuf,
        /// The metadata key at fault (`tokenizer.ggml.merges`).
        key: String,
        /// What is wrong (names the index where there is one).
        message: String,
    },
    /// A Hugging Face tokenizer that GGUF's tokenizer metadata cannot state so that llama.cpp
    /// tokenizes as it does (a normalizer or pre-tokenizer llama.cpp has no equivalent of, a
    /// post-processor other than BOS/EOS around the text, …).
    #[error("{}: {field}: {message} (GGUF cannot state this tokenizer)", path.display())]
    HfToGguf {
        /// The `tokenizer.json` (or `tokenizer_config.json`).
        path: PathBuf,
        /// The field at fault (`pre_tokenizer`, `model.merges[12]`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The model directory has no chat template (`chat_template.jinja` or
    /// `tokenizer_config.json`'s `chat_template`).
    #[error("{}: no chat template (neither chat_template.jinja nor a `chat_template` in tokenizer_config.json)", path.display())]
    NoChatTemplate {
        /// The model directory.
        path: PathBuf,
    },
    /// A chat template failed to parse or to render (including its own
    /// `raise_exception`), or its inputs are malformed.
    #[error("chat template {}: {message}", path.display())]
    ChatTemplate {
        /// The file the template came from.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// Whether the error is a bad file of the model directory (missing, not a regular file,
    /// malformed): the user's input is at fault, not the machine. An unreadable file
    /// ([`Error::Io`]) is not, nor is a chat template's failure, which depends on the
    /// conversation it was given.
    pub fn is_bad_model_file(&self) -> bool {
        matches!(
            self,
            Error::MissingFile { .. }
                | Error::NotRegularFile { .. }
                | Error::Json { .. }
                | Error::InvalidConfig { .. }
                | Error::Tokenizer { .. }
                | Error::GgufTokenizer { .. }
                | Error::HfToGguf { .. }
        )
    }
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
