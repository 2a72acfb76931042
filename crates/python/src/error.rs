//! [`Error`]: everything that can go wrong in the package, and how each becomes a Python
//! exception.
//!
//! The exception classes are Python classes (`sieve._errors`, so they can carry attributes and
//! inherit from both `sieve.SieveError` and the built-in they resemble); the package hands them
//! to the native module once at import ([`set_classes`]).

use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Pipeline text that does not parse, validate or build.
    #[error("{message}")]
    Pipeline {
        /// The one-line form (`line 1, column 13: unknown stage ...`).
        message: String,
        /// The multi-line form: the source line with a caret under the mistake, and the help.
        diagnostic: String,
        /// 1-based line of the mistake.
        line: usize,
        /// 1-based column of the mistake, in characters.
        column: usize,
    },
    /// A plugin that cannot be loaded or registered.
    #[error("{0}")]
    Plugin(String),
    /// A stage failed while running (no finite candidate left, a grammar refusing a token).
    #[error("{0}")]
    Sampling(String),
    /// A bad argument from the caller (wrong length, NaN logits, a token beyond the
    /// vocabulary).
    #[error("{0}")]
    Input(String),
    /// A tokenizer that cannot be read.
    #[error("{0}")]
    Tokenizer(String),
    /// A panic caught at the boundary: a bug in sieve or in a plugin.
    #[error("internal error (please report it): {0}")]
    Internal(String),
}

impl Error {
    /// The error for `diagnostic` about `source`.
    pub fn pipeline(diagnostic: &sieve_dsl::Diagnostic, source: &str) -> Error {
        Error::Pipeline {
            message: diagnostic.to_string(),
            diagnostic: diagnostic.render(source),
            line: diagnostic.line,
            column: diagnostic.column,
        }
    }

    /// The same error with `what: ` before its message (`row 3: ...`).
    pub fn context(self, what: &str) -> Error {
        match self {
            Error::Sampling(m) => Error::Sampling(format!("{what}: {m}")),
            Error::Input(m) => Error::Input(format!("{what}: {m}")),
            other => other,
        }
    }
}

/// The Python exception classes, set once by the package at import.
struct Classes {
    pipeline: Py<PyType>,
    plugin: Py<PyType>,
    sampling: Py<PyType>,
    base: Py<PyType>,
}

static CLASSES: OnceLock<Classes> = OnceLock::new();

/// Records the exception classes the package defines (`sieve._errors`): called once by
/// `sieve/__init__.py`.
#[pyfunction]
pub fn set_classes(
    pipeline: Bound<'_, PyType>,
    plugin: Bound<'_, PyType>,
    sampling: Bound<'_, PyType>,
    base: Bound<'_, PyType>,
) {
    let _ = CLASSES.set(Classes {
        pipeline: pipeline.unbind(),
        plugin: plugin.unbind(),
        sampling: sampling.unbind(),
        base: base.unbind(),
    });
}

impl From<Error> for PyErr {
    fn from(error: Error) -> PyErr {
        Python::attach(|py| {
            let Some(classes) = CLASSES.get() else {
                return PyRuntimeError::new_err(error.to_string());
            };
            let made = match &error {
                Error::Pipeline {
                    message,
                    diagnostic,
                    line,
                    column,
                } => classes.pipeline.bind(py).call1((
                    message.as_str(),
                    diagnostic.as_str(),
                    *line,
                    *column,
                )),
                Error::Plugin(m) => classes.plugin.bind(py).call1((m.as_str(),)),
                Error::Sampling(m) => classes.sampling.bind(py).call1((m.as_str(),)),
                Error::Input(m) | Error::Tokenizer(m) => return PyValueError::new_err(m.clone()),
                Error::Internal(_) => classes.base.bind(py).call1((error.to_string(),)),
            };
            match made {
                Ok(value) => PyErr::from_value(value),
                Err(e) => e,
            }
        })
    }
}

/// Runs `f`, turning a panic into [`Error::Internal`] so that no panic crosses into Python.
pub fn guard<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Err(Error::Internal(message))
        }
    }
}
