//! The metadata of a GGUF file and its typed accessors: integers are accepted in whichever
//! width a file uses, as long as the value fits the type asked for.
//!
//! A file read by [`crate::GgufFile`] keeps its arrays where they are, in the file's bytes
//! (checked when the header was read, element by element, as if they were parsed): the
//! typed array accessors ([`Metadata::get_str_array`], …) read them from there, so the
//! 151 936 token strings of a vocabulary cost no memory of their own. [`Metadata::get`] and
//! [`Metadata::entries`] parse an array into [`Value`]s on first use and keep it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::cursor::{Cursor, RawArray};
use crate::storage::Storage;
use crate::value::{type_name, Value, ValueType};
use crate::{Error, Result};

/// One pair's value as the header reader leaves it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    /// Parsed.
    Value(Value),
    /// An array left in the file.
    Raw(RawArray),
}

/// One pair.
#[derive(Clone)]
struct Slot {
    key: String,
    /// The parsed value (for an array left in the file, once something asked for it).
    value: OnceLock<Value>,
    /// The array in the file, when it was left there.
    raw: Option<RawArray>,
}

/// The metadata of a GGUF file: its key/value pairs in file order, with lookup by key and
/// typed accessors whose errors name the file and the key.
#[derive(Clone, Default)]
pub struct Metadata {
    path: PathBuf,
    slots: Vec<Slot>,
    by_key: HashMap<String, usize>,
    /// The file's bytes, where the arrays left in it are.
    bytes: Option<Storage>,
    /// Every pair parsed, for [`Metadata::entries`].
    entries: OnceLock<Vec<(String, Value)>>,
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metadata")
            .field("path", &self.path)
            .field(
                "keys",
                &self.slots.iter().map(|s| &s.key).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Metadata {
    /// Metadata of the file `path` (named in errors), from its pairs in order.
    ///
    /// # Errors
    /// [`Error::Metadata`] for a key given twice.
    pub fn new(path: &Path, entries: Vec<(String, Value)>) -> Result<Self> {
        let pairs = entries
            .into_iter()
            .map(|(k, v)| (k, Parsed::Value(v)))
            .collect();
        Metadata::with_bytes(path, pairs, None)
    }

    /// Metadata whose arrays may be left in `bytes`, the file's contents.
    pub(crate) fn with_bytes(
        path: &Path,
        pairs: Vec<(String, Parsed)>,
        bytes: Option<Storage>,
    ) -> Result<Self> {
        let mut by_key = HashMap::with_capacity(pairs.len());
        let mut slots = Vec::with_capacity(pairs.len());
        for (i, (key, parsed)) in pairs.into_iter().enumerate() {
            if by_key.insert(key.clone(), i).is_some() {
                return Err(Error::Metadata {
                    path: path.to_path_buf(),
                    key,
                    message: "the key appears twice".to_string(),
                });
            }
            let (value, raw) = match parsed {
                Parsed::Value(v) => (OnceLock::from(v), None),
                Parsed::Raw(raw) => (OnceLock::new(), Some(raw)),
            };
            slots.push(Slot { key, value, raw });
        }
        let bytes = bytes.filter(|_| slots.iter().any(|s| s.raw.is_some()));
        Ok(Metadata {
            path: path.to_path_buf(),
            slots,
            by_key,
            bytes,
            entries: OnceLock::new(),
        })
    }

    /// The pairs, in file order (every array parsed, on the first call).
    pub fn entries(&self) -> &[(String, Value)] {
        self.entries.get_or_init(|| {
            self.slots
                .iter()
                .map(|s| {
                    let value = match s.value.get() {
                        Some(v) => v.clone(),
                        None => self.parse(s),
                    };
                    (s.key.clone(), value)
                })
                .collect()
        })
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there is no pair.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether `key` is present (nothing is parsed).
    pub fn contains(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// The value of `key`, if present (an array left in the file is parsed and kept).
    pub fn get(&self, key: &str) -> Option<&Value> {
        let slot = self.slot(key)?;
        Some(slot.value.get_or_init(|| self.parse(slot)))
    }

    fn slot(&self, key: &str) -> Option<&Slot> {
        self.by_key.get(key).map(|&i| &self.slots[i])
    }

    /// `key`'s parsed value, or the array it left in the file.
    fn lookup(&self, key: &str) -> Option<std::result::Result<&Value, RawArray>> {
        let slot = self.slot(key)?;
        Some(match (slot.raw, slot.value.get()) {
            (Some(raw), _) => Err(raw),
            (None, Some(v)) => Ok(v),
            (None, None) => Ok(slot.value.get_or_init(|| self.parse(slot))),
        })
    }

    /// The array `slot` left in the file, parsed (an empty array if it could not be, which
    /// the check made when the header was read rules out).
    fn parse(&self, slot: &Slot) -> Value {
        let (Some(raw), Some(bytes)) = (slot.raw, &self.bytes) else {
            return Value::Array(ValueType::U8, Vec::new());
        };
        let what = || format!("metadata key `{}`", slot.key);
        Cursor::at(&self.path, (**bytes).as_ref(), raw.head)
            .value(ValueType::Array, 0, &what)
            .unwrap_or_else(|_| Value::Array(raw.elem, Vec::new()))
    }

    /// The elements of `raw` in the file, each read by `read` from a cursor at it.
    fn read_raw<'s, T>(
        &'s self,
        key: &str,
        raw: RawArray,
        mut read: impl FnMut(&mut Cursor<'s>, usize, &dyn Fn() -> String) -> Result<T>,
    ) -> Result<Vec<T>> {
        let Some(bytes) = &self.bytes else {
            return Err(self.error(key, "the array's bytes are gone"));
        };
        let what = || format!("metadata key `{key}`");
        let mut c = Cursor::at(&self.path, (**bytes).as_ref(), raw.start);
        (0..raw.count).map(|i| read(&mut c, i, &what)).collect()
    }

    /// An error about `key` of this file.
    pub fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::Metadata {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn wrong_type(&self, key: &str, wanted: &str, found: &str) -> Error {
        self.error(key, format!("expected {wanted}, found {found}"))
    }

    /// `key`'s value when it is not an array left in the file; else the error saying that
    /// `wanted` was expected.
    fn scalar(&self, key: &str, wanted: &str) -> Result<Option<&Value>> {
        match self.lookup(key) {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(raw)) => Err(self.wrong_type(key, wanted, &describe_raw(raw))),
        }
    }

    /// An integer value converted to `T`, accepting every integer width.
    fn int<T: TryFrom<i128>>(&self, key: &str, wanted: &str) -> Result<Option<T>> {
        let Some(v) = self.scalar(key, wanted)? else {
            return Ok(None);
        };
        let Some(i) = v.as_i128() else {
            return Err(self.wrong_type(key, wanted, &v.describe()));
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
        match self.scalar(key, "a float")? {
            None => Ok(None),
            Some(v) => v
                .as_f32()
                .map(Some)
                .ok_or_else(|| self.wrong_type(key, "a float", &v.describe())),
        }
    }

    /// `key` as a `bool`; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.scalar(key, "a bool")? {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.wrong_type(key, "a bool", &v.describe())),
        }
    }

    /// `key` as a string; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_str(&self, key: &str) -> Result<Option<&str>> {
        match self.scalar(key, "a string")? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong_type(key, "a string", &v.describe())),
        }
    }

    /// `key` as an array's elements; `None` when absent (an array left in the file is parsed
    /// and kept: the typed accessors below read it in place).
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_array(&self, key: &str) -> Result<Option<&[Value]>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(_, items)) => Ok(Some(items)),
            Some(v) => Err(self.wrong_type(key, "an array", &v.describe())),
        }
    }

    /// `key` as an array of strings, borrowed from the file; `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_str_array(&self, key: &str) -> Result<Option<Vec<&str>>> {
        const WANTED: &str = "an array of string";
        let items = match self.lookup(key) {
            None => return Ok(None),
            Some(Err(raw)) if raw.elem == ValueType::String => {
                return self.read_raw(key, raw, |c, _, what| c.str(what)).map(Some)
            }
            Some(Err(raw)) if raw.count == 0 => return Ok(Some(Vec::new())),
            Some(Err(raw)) => return Err(self.wrong_type(key, WANTED, &describe_raw(raw))),
            Some(Ok(Value::Array(_, items))) => items,
            Some(Ok(v)) => return Err(self.wrong_type(key, "an array", &v.describe())),
        };
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                v => Err(self.wrong_type(key, WANTED, &array_of(v.value_type()))),
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// `key` as an array of `f32` (elements stored as `f32` or `f64`); `None` when absent.
    ///
    /// # Errors
    /// [`Error::Metadata`] for another type.
    pub fn get_f32_array(&self, key: &str) -> Result<Option<Vec<f32>>> {
        const WANTED: &str = "an array of f32";
        let items = match self.lookup(key) {
            None => return Ok(None),
            Some(Err(raw)) if matches!(raw.elem, ValueType::F32 | ValueType::F64) => {
                return self
                    .read_raw(key, raw, |c, _, what| {
                        let v = c.value(raw.elem, 1, what)?;
                        Ok(v.as_f32().unwrap_or(f32::NAN))
                    })
                    .map(Some)
            }
            Some(Err(raw)) if raw.count == 0 => return Ok(Some(Vec::new())),
            Some(Err(raw)) => return Err(self.wrong_type(key, WANTED, &describe_raw(raw))),
            Some(Ok(Value::Array(_, items))) => items,
            Some(Ok(v)) => return Err(self.wrong_type(key, "an array", &v.describe())),
        };
        items
            .iter()
            .map(|v| {
                v.as_f32()
                    .ok_or_else(|| self.wrong_type(key, WANTED, &array_of(v.value_type())))
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
        const WANTED: &str = "an array of integers";
        let fit = |i: usize, n: i128| {
            i32::try_from(n)
                .map_err(|_| self.error(key, format!("element {i}: {n} does not fit i32")))
        };
        let items = match self.lookup(key) {
            None => return Ok(None),
            Some(Err(raw)) if is_integer(raw.elem) => {
                return self
                    .read_raw(key, raw, |c, i, what| {
                        let n = c.value(raw.elem, 1, what)?.as_i128().unwrap_or(i128::MAX);
                        fit(i, n)
                    })
                    .map(Some)
            }
            Some(Err(raw)) if raw.count == 0 => return Ok(Some(Vec::new())),
            Some(Err(raw)) => return Err(self.wrong_type(key, WANTED, &describe_raw(raw))),
            Some(Ok(Value::Array(_, items))) => items,
            Some(Ok(v)) => return Err(self.wrong_type(key, "an array", &v.describe())),
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let n = v
                    .as_i128()
                    .ok_or_else(|| self.wrong_type(key, WANTED, &array_of(v.value_type())))?;
                fit(i, n)
            })
            .collect::<Result<_>>()
            .map(Some)
    }
}

/// Whether `t` is an integer type.
fn is_integer(t: ValueType) -> bool {
    use ValueType::*;
    matches!(t, U8 | I8 | U16 | I16 | U32 | I32 | U64 | I64)
}

/// An array of `t`, as error messages name it.
fn array_of(t: ValueType) -> String {
    Value::Array(t, Vec::new()).describe()
}

/// An array left in the file, as error messages name it.
fn describe_raw(raw: RawArray) -> String {
    format!("array of {}", type_name(raw.elem))
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
