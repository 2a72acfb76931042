//! Reading a JSON file of a model directory into a serde type, with errors that name the file
//! and the field.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// Reads `path` and deserializes it; a missing file is [`Error::MissingFile`].
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_text(path)?;
    parse_json(path, &text)
}

/// Reads a whole text file; a missing file is [`Error::MissingFile`].
pub(crate) fn read_text(path: &Path) -> Result<String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| Error::Json {
            path: path.to_path_buf(),
            field: None,
            message: format!("not UTF-8 text ({e})"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::MissingFile {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Deserializes `text` (the contents of `path`), naming the field on a type error.
pub(crate) fn parse_json<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        Error::Json {
            path: path.to_path_buf(),
            field: (field != ".").then_some(field),
            message: e.into_inner().to_string(),
        }
    })?;
    de.end().map_err(|e| Error::Json {
        path: path.to_path_buf(),
        field: None,
        message: e.to_string(),
    })?;
    Ok(value)
}

/// A JSON value that is one token id or a list of them (`eos_token_id` in HF configs).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    /// A single id.
    One(u32),
    /// Several ids.
    Many(Vec<u32>),
}

impl OneOrMany {
    /// The ids as a list.
    pub(crate) fn into_vec(self) -> Vec<u32> {
        match self {
            OneOrMany::One(id) => vec![id],
            OneOrMany::Many(ids) => ids,
        }
    }
}
