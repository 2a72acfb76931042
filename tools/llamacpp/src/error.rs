//! The tool's one error type.

use std::fmt;

/// Everything that can go wrong; `Usage` exits 2, the rest exit 1.
#[derive(Debug)]
pub enum Error {
    /// A bad command line (unknown command or option, missing or malformed argument).
    Usage(String),
    /// A file could not be read or written.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A JSON input could not be parsed or had the wrong shape.
    Json {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// llama.cpp refused (load, context, decode, quantize, template).
    Llama(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => write!(f, "{msg}"),
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Json { path, message } => write!(f, "{path}: {message}"),
            Error::Llama(msg) => write!(f, "llama.cpp: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

/// The tool's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Wraps an I/O error with the file it concerns.
pub fn io(path: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_string(),
        source,
    }
}

/// Wraps any displayable llama.cpp-side failure.
pub fn llama<E: fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |err| Error::Llama(format!("{what}: {err}"))
}
