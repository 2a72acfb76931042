//! Metadata values (`gguf_type` in llama.cpp's `gguf.h`) and the typed accessors of
//! [`Metadata`]: integers are accepted in whichever width a file uses, as long as the value
//! fits the type asked for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The type of a metadata value, by its id in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `u8` (id 0).
    U8,
    /// `i8` (id 1).
    I8,
    /// `u16` (id 2).
    U16,
    /// `i16` (id 3).
    I16,
    /// `u32` (id 4).
    U32,
    /// `i32` (id 5).
    I32,
    /// `f32` (id 6).
    F32,
    /// `bool`, one byte 0 or 1 (id 7).
    Bool,
    /// A `u64` length and UTF-8 bytes (id 8).
    String,
    /// An element type, a `u64` count and the elements (id 9).
    Array,
    /// `u64` (id 10).
    U64,
    /// `i64` (id 11).
    I64,
    /// `f64` (id 12).
    F64,
}

impl ValueType {
    /// The type of id `id`, or `None`.
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The id written in the file.
    pub fn id(self) -> u32 {
        use ValueType::*;
        match self {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            String => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    /// The fewest bytes one value of this type takes in the file (a string's or an array's
    /// header when empty), which bounds how many of them a file can hold.
    pub fn min_bytes(self) -> u64 {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f32`.
    F32(f32),
    /// `f64`.
    F64(f64),
    /// `bool`.
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// An array whose elements all have the type `.0` (arrays may nest).
    Array(ValueType, Vec<Value>),
}

impl Value {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F32(_) => ValueType::F32,
            Value::F64(_) => ValueType::F64,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(..) => ValueType::Array,
        }
    }

    /// The value as an integer, whichever integer width it is stored in.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(v) => v.into(),
            Value::I8(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U64(v) => v.into(),
            Value::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// The value as a float (`f32` or `f64`; an `f64` is rounded).
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(v) => Some(v),
            Value::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    /// A short description of the type, for error messages (`array of string`, `u32`).
    pub fn describe(&self) -> String {
        match self {
            Value::Array(t, _) => format!("array of {}", type_name(*t)),
            other => type_name(other.value_type()).to_string(),
        }
    }
}

/// The name of a value type in error messages.
fn type_name(t: ValueType) -> &'static str {
    use ValueType::*;
    match t {
        U8 => "u8",
        I8 => "i8",
        U16 => "u16",
        I16 => "i16",
        U32 => "u32",
        I32 => "i32",
        F32 => "f32",
        Bool => "bool",
        String => "string",
        Array => "array",
        U64 => "u64",
        I64 => "i64",
        F64 => "f64",
    }
}

/// The metadata of a GGUF file: its key/value pairs in file order, with lookup by key and
/// typed accessors whose errors name the file and the key.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    path: PathBuf,
    entries: Vec<(String, Value)>,
    by_key: HashMap<String, usize>,
}

impl Metadata {
    /// Metadata of the file `path` (named in errors), from its pairs in order.
    ///
    /// # Errors
    /// [`Error::Metadata`] for a key given twice.
    pub fn new(path: &Path, entries: Vec<(String, Value)>) -> Result<Self> {
        let mut by_key = HashMap::with_capacity(entries.len());
        for (i, (key, _)) in entries.iter().enumerate() {
            if by_key.insert(key.clone(), i).is_some() {
                return Err(Error::Metadata {
                    path: path.to_path_buf(),
                    key: key.clone(),
                    message: "the key appears twice".to_string(),
                });
            }
        }
        Ok(Metadata {
            path: path.to_path_buf(),
            entries,
            by_key,
        })
    }

    /// The pairs, in file order.
    pub fn entries(&self) -> &[(String, Value)] {
        &self.entries
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no pair.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.by_key.get(key).map(|&i| &self.entries[i].1)
    }

    /// An error about `key` of this file.
    pub fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::Metadata {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn wrong_type(&self, key: &str, wanted: &str, found: &Value) -> Error {
        self.error(
            key,
            format!("expected {wanted}, found {}", found.describe()),
        )
    }

    /// An integer value converted to `T`, accepting every integer width.
    fn int<T: TryFrom<i128>>(&self, key: &str, wanted: &str) -> Result<Option<T>> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let Some(i) = v.as_i128() else {
            return Err(self.wrong_type(key, wanted, v));
        };
        T::try_from(i)
            .map(Some)
            .map_err(|_| self.error(key, format!("{i} does not fit {wanted}")))
    }

    /// `key` as a `u32` (stored in any integer width, if it fits); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type or a value out of range.
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>> {
        self.int(key, "an integer in u32 range")
    }

    /// `key` as a `u64` (any integer width, if non-negative); `None` when absent.
    ///
    /// # Errors
    /// As [`Metadata::get_u32`].
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>> {
        self.int(key, "an integer in u64 range")
    }

    /// `key` as an `i64` (any integer width, if it fits); `None` when absent.
    ///
    /// # Errors
    /// As [`Metadata::get_u32`].
    pub fn get_i64(&self, key: &str) -> Result<Option<i64>> {
        self.int(key, "an integer in i64 range")
    }

    /// `key` as an `f32` (stored as `f32` or `f64`); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_f32(&self, key: &str) -> Result<Option<f32>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f32()
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, "a float", v)),
        }
    }

    /// `key` as a `bool`; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.wrong_type(key, "a bool", v)),
        }
    }

    /// `key` as a string; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_str(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong_type(key, "a string", v)),
        }
    }

    /// `key` as an array's elements; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_array(&self, key: &str) -> Result<Option<&[Value]>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(_, items)) => Ok(Some(items)),
            Some(v) => Err(self.wrong_type(key, "an array", v)),
        }
    }

    /// `key` as an array of strings; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_str_array(&self, key: &str) -> Result<Option<Vec<&str>>> {
        let Some(items) = self.get_array(key)? else {
            return Ok(None);
        };
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                v => Err(self.wrong_type(key, "an array of string", &array_of(v))),
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// `key` as an array of `f32` (elements stored as `f32` or `f64`); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_f32_array(&self, key: &str) -> Result<Option<Vec<f32>>> {
        let Some(items) = self.get_array(key)? else {
            return Ok(None);
        };
        items
            .iter()
            .map(|v| {
                v.as_f32()
                    .ok_or_else(|| self.wrong_type(key, "an array of f32", &array_of(v)))
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// `key` as an array of `i32` (elements of any integer width that fit); `None` when
    /// absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type or an element out of range.
    pub fn get_i32_array(&self, key: &str) -> Result<Option<Vec<i32>>> {
        let Some(items) = self.get_array(key)? else {
            return Ok(None);
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let n = v
                    .as_i128()
                    .ok_or_else(|| self.wrong_type(key, "an array of integers", &array_of(v)))?;
                i32::try_from(n)
                    .map_err(|_| self.error(key, format!("element {i}: {n} does not fit i32")))
            })
            .collect::<Result<_>>()
            .map(Some)
    }
}

/// An empty array of `v`'s type, to describe a bad element as the array it makes.
fn array_of(v: &Value) -> Value {
    Value::Array(v.value_type(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(entries: Vec<(&str, Value)>) -> Metadata {
        let entries = entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Metadata::new(Path::new("m.gguf"), entries).unwrap()
    }

    #[test]
    fn integers_of_any_width_that_fit() {
        let m = meta(vec![
            ("a", Value::U64(30)),
            ("b", Value::I32(-1)),
            ("c", Value::U64(1 << 40)),
            ("d", Value::F32(1.5)),
        ]);
        assert_eq!(m.get_u32("a").unwrap(), Some(30));
        assert_eq!(m.get_u32("missing").unwrap(), None);
        let e = m.get_u32("b").unwrap_err().to_string();
        assert!(e.contains("`b`") && e.contains("-1"), "{e}");
        assert!(m.get_u32("c").is_err());
        assert_eq!(m.get_u64("c").unwrap(), Some(1 << 40));
        let e = m.get_u32("d").unwrap_err().to_string();
        assert!(e.contains("found f32"), "{e}");
        assert_eq!(m.get_f32("d").unwrap(), Some(1.5));
    }

    #[test]
    fn arrays_are_typed() {
        let m = meta(vec![
            (
                "s",
                Value::Array(
                    ValueType::String,
                    vec![Value::String("a".into()), Value::String("b".into())],
                ),
            ),
            ("i", Value::Array(ValueType::U8, vec![Value::U8(3)])),
        ]);
        assert_eq!(m.get_str_array("s").unwrap(), Some(vec!["a", "b"]));
        assert_eq!(m.get_i32_array("i").unwrap(), Some(vec![3]));
        let e = m.get_f32_array("s").unwrap_err().to_string();
        assert!(e.contains("array of string"), "{e}");
    }

    #[test]
    fn a_duplicate_key_is_an_error() {
        let e = Metadata::new(
            Path::new("m.gguf"),
            vec![("k".into(), Value::U8(1)), ("k".into(), Value::U8(2))],
        )
        .unwrap_err();
        assert!(e.to_string().contains("twice"));
    }
}
