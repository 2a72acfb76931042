//! Reading a JSON file of a model directory into a serde type, with errors that name the file
//! and the field; and [`ConfigJson`], `config.json` as an object whose fields a model family
//! reads one by one.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{Error, Result};

/// Reads `path` and deserializes it; a missing file is [`Error::MissingFile`].
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_text(path)?;
    parse_json(path, &text)
}

/// Reads a whole text file; a missing file is [`Error::MissingFile`], anything but a regular
/// file [`Error::NotRegularFile`].
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = crate::files::read_regular(path)?;
    String::from_utf8(bytes).map_err(|e| Error::Json {
        path: path.to_path_buf(),
        field: None,
        message: format!("not UTF-8 text ({e})"),
    })
}

/// Deserializes `text` (the contents of `path`), naming the field on a type error.
pub fn parse_json<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
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
pub enum OneOrMany {
    /// A single id.
    One(u32),
    /// Several ids.
    Many(Vec<u32>),
}

impl OneOrMany {
    /// The ids as a list.
    pub fn into_vec(self) -> Vec<u32> {
        match self {
            OneOrMany::One(id) => vec![id],
            OneOrMany::Many(ids) => ids,
        }
    }
}

/// `config.json` as a JSON object: each model family reads the fields it knows, with its own
/// defaults, and every error names the file and the field.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigJson {
    path: PathBuf,
    fields: Map<String, Value>,
}

impl ConfigJson {
    /// Reads `path`.
    ///
    /// # Errors
    /// [`Error::MissingFile`], [`Error::Io`], or [`Error::Json`] when the text is not a JSON
    /// object.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = read_text(path)?;
        Self::from_json(path, &text)
    }

    /// Parses the text of a `config.json`; `path` only names it in errors.
    ///
    /// # Errors
    /// [`Error::Json`] when the text is not a JSON object.
    pub fn from_json(path: &Path, text: &str) -> Result<Self> {
        let value: Value = parse_json(path, text)?;
        match value {
            Value::Object(fields) => Ok(ConfigJson {
                path: path.to_path_buf(),
                fields,
            }),
            _ => Err(Error::Json {
                path: path.to_path_buf(),
                field: None,
                message: "expected a JSON object".to_string(),
            }),
        }
    }

    /// The file, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The field `name` as it is written, `None` when absent (a `null` is `Some(Null)`).
    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// The field `name` as a `T`; `None` when it is absent or `null`.
    ///
    /// # Errors
    /// [`Error::Json`] naming the field when it has another type.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        Ok(self.get_nullable(name)?.flatten())
    }

    /// The field `name`, telling an absent field (`None`) from an explicit `null`
    /// (`Some(None)`), for fields where `null` means something (`sliding_window`).
    ///
    /// # Errors
    /// [`Error::Json`] naming the field when it has another type.
    pub fn get_nullable<T: DeserializeOwned>(&self, name: &str) -> Result<Option<Option<T>>> {
        match self.fields.get(name) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(v) => T::deserialize(v)
                .map(|x| Some(Some(x)))
                .map_err(|e| Error::Json {
                    path: self.path.clone(),
                    field: Some(name.to_string()),
                    message: e.to_string(),
                }),
        }
    }

    /// `eos_token_id` (one id or a list) as a list; empty when absent or `null`.
    ///
    /// # Errors
    /// [`Error::Json`] naming the field when it has another type.
    pub fn eos_token_ids(&self) -> Result<Vec<u32>> {
        Ok(self
            .get::<OneOrMany>("eos_token_id")?
            .map(OneOrMany::into_vec)
            .unwrap_or_default())
    }

    /// An [`Error::InvalidConfig`] about this file, as this crate's error or any error that
    /// wraps it (`sieve_backends::Error`, for a model family that reads this file).
    pub fn invalid<E: From<Error>>(&self, message: impl Into<String>) -> E {
        E::from(Error::InvalidConfig {
            path: self.path.clone(),
            message: message.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigJson> {
        ConfigJson::from_json(Path::new("config.json"), text)
    }

    #[test]
    fn fields_are_typed_and_absent_differs_from_null() {
        let c = parse(r#"{"a": 3, "b": null, "c": "x"}"#).unwrap();
        assert_eq!(c.get::<usize>("a").unwrap(), Some(3));
        assert_eq!(c.get::<usize>("b").unwrap(), None);
        assert_eq!(c.get_nullable::<usize>("b").unwrap(), Some(None));
        assert_eq!(c.get_nullable::<usize>("z").unwrap(), None);
        match c.get::<usize>("c").unwrap_err() {
            Error::Json { field, .. } => assert_eq!(field.as_deref(), Some("c")),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn eos_is_one_id_or_a_list() {
        assert_eq!(
            parse(r#"{"eos_token_id": 2}"#)
                .unwrap()
                .eos_token_ids()
                .unwrap(),
            [2]
        );
        let list = parse(r#"{"eos_token_id": [2, 7]}"#).unwrap();
        assert_eq!(list.eos_token_ids().unwrap(), [2, 7]);
        assert!(parse("{}").unwrap().eos_token_ids().unwrap().is_empty());
        assert!(parse(r#"{"eos_token_id": "</s>"}"#)
            .unwrap()
            .eos_token_ids()
            .is_err());
    }

    #[test]
    fn only_an_object_is_a_config() {
        for text in ["[]", "3", "{\"a\": ", "{} trailing"] {
            assert!(matches!(parse(text), Err(Error::Json { .. })), "{text}");
        }
    }
}
