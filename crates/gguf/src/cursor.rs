//! A bounds-checked little-endian reader over the file's bytes: every read checks that the
//! bytes are there, every count is checked against what is left before anything is
//! allocated for it.

use std::path::Path;

use crate::value::{Value, ValueType};
use crate::{Error, Result};

/// How deep arrays may nest (real files nest at most once); deeper is refused rather than
/// recursed into.
pub(crate) const MAX_ARRAY_DEPTH: usize = 8;

/// Reads the bytes of one file from a position.
pub(crate) struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A reader at the start of `bytes` (the contents of `path`).
    pub(crate) fn new(path: &'a Path, bytes: &'a [u8]) -> Self {
        Cursor::at(path, bytes, 0)
    }

    /// A reader at byte `pos` of `bytes` (at most their length).
    pub(crate) fn at(path: &'a Path, bytes: &'a [u8], pos: usize) -> Self {
        Cursor {
            path,
            bytes,
            pos: pos.min(bytes.len()),
        }
    }

    /// The current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position.
    pub(crate) fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    /// A [`Error::Malformed`] about `what` at the current position.
    pub(crate) fn malformed(&self, what: &dyn Fn() -> String, message: String) -> Error {
        self.malformed_at(self.pos, what, message)
    }

    /// A [`Error::Malformed`] about `what` at byte `offset`.
    fn malformed_at(&self, offset: usize, what: &dyn Fn() -> String, message: String) -> Error {
        Error::Malformed {
            path: self.path.to_path_buf(),
            what: what(),
            offset: offset as u64,
            message,
        }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.malformed(
                what,
                format!(
                    "needs {n} bytes, past the end of the file ({} left)",
                    self.remaining()
                ),
            ));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let b = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// A `u32`.
    pub(crate) fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A `u64`.
    pub(crate) fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A count of items taking at least `min_bytes` each, checked against the bytes left, so
    /// that allocating room for that many items is proportional to the file.
    pub(crate) fn count(&mut self, min_bytes: u64, what: &dyn Fn() -> String) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let need = n.checked_mul(min_bytes);
        if need.is_none_or(|need| need > self.remaining()) {
            return Err(self.malformed_at(
                at,
                what,
                format!(
                    "count {n} past the end of the file: {n} items of at least {min_bytes} bytes, {} bytes left",
                    self.remaining()
                ),
            ));
        }
        Ok(n as usize)
    }

    /// A GGUF string: a `u64` length and UTF-8 bytes.
    pub(crate) fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        self.str(what).map(str::to_string)
    }

    /// A GGUF string, borrowed from the file's bytes.
    pub(crate) fn str(&mut self, what: &dyn Fn() -> String) -> Result<&'a str> {
        let at = self.pos;
        let len = self.u64(what)?;
        if len > self.remaining() {
            return Err(self.malformed_at(
                at,
                what,
                format!(
                    "string length {len} past the end of the file ({} bytes left)",
                    self.remaining()
                ),
            ));
        }
        let start = self.pos;
        let bytes = self.take(len, what)?;
        std::str::from_utf8(bytes).map_err(|e| Error::Malformed {
            path: self.path.to_path_buf(),
            what: what(),
            offset: start as u64,
            message: format!("string is not UTF-8 ({e})"),
        })
    }

    /// A value type id.
    pub(crate) fn value_type(&mut self, what: &dyn Fn() -> String) -> Result<ValueType> {
        let id = self.u32(what)?;
        ValueType::from_id(id)
            .ok_or_else(|| self.malformed(what, format!("unknown value type {id} (0 to 12 exist)")))
    }

    /// One value of type `t`, arrays nested at most [`MAX_ARRAY_DEPTH`] deep.
    pub(crate) fn value(
        &mut self,
        t: ValueType,
        depth: usize,
        what: &dyn Fn() -> String,
    ) -> Result<Value> {
        Ok(match t {
            ValueType::U8 => Value::U8(self.array::<1>(what)?[0]),
            ValueType::I8 => Value::I8(i8::from_le_bytes(self.array(what)?)),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(what)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(what)?)),
            ValueType::U32 => Value::U32(self.u32(what)?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(what)?)),
            ValueType::U64 => Value::U64(self.u64(what)?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(what)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(what)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(what)?)),
            ValueType::Bool => Value::Bool(self.bool(what)?),
            ValueType::String => Value::String(self.string(what)?),
            ValueType::Array => {
                self.check_depth(depth, what)?;
                let elem = self.value_type(what)?;
                let n = self.count(elem.min_bytes(), what)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(elem, depth + 1, what)?);
                }
                Value::Array(elem, items)
            }
        })
    }

    /// A `bool`: one byte, 0 or 1.
    fn bool(&mut self, what: &dyn Fn() -> String) -> Result<bool> {
        match self.array::<1>(what)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => {
                self.pos -= 1;
                Err(self.malformed(what, format!("bool byte {b}, expected 0 or 1")))
            }
        }
    }

    /// Refuses an array nested `depth` arrays deep when that is too deep.
    fn check_depth(&self, depth: usize, what: &dyn Fn() -> String) -> Result<()> {
        if depth >= MAX_ARRAY_DEPTH {
            return Err(self.malformed(
                what,
                format!("arrays nested more than {MAX_ARRAY_DEPTH} deep"),
            ));
        }
        Ok(())
    }

    /// An array (its element type, count and elements) checked exactly as [`Cursor::value`]
    /// reads one, but left in the file: nothing is allocated for its elements.
    pub(crate) fn raw_array(&mut self, what: &dyn Fn() -> String) -> Result<RawArray> {
        let head = self.pos;
        let (elem, count) = self.skip_array(0, what)?;
        Ok(RawArray {
            elem,
            count,
            head,
            start: head + 12,
        })
    }

    /// Checks and steps over an array's element type, count and elements.
    fn skip_array(
        &mut self,
        depth: usize,
        what: &dyn Fn() -> String,
    ) -> Result<(ValueType, usize)> {
        self.check_depth(depth, what)?;
        let elem = self.value_type(what)?;
        let n = self.count(elem.min_bytes(), what)?;
        for _ in 0..n {
            self.skip(elem, depth + 1, what)?;
        }
        Ok((elem, n))
    }

    /// Checks and steps over one value of type `t`.
    fn skip(&mut self, t: ValueType, depth: usize, what: &dyn Fn() -> String) -> Result<()> {
        match t {
            ValueType::String => self.str(what).map(drop),
            ValueType::Bool => self.bool(what).map(drop),
            ValueType::Array => self.skip_array(depth, what).map(drop),
            fixed => self.take(fixed.min_bytes(), what).map(drop),
        }
    }
}

/// An array left in the file's bytes ([`Cursor::raw_array`]), checked when the header was
/// read: its elements are read from the file when asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawArray {
    /// The element type.
    pub elem: ValueType,
    /// Number of elements.
    pub count: usize,
    /// Offset of the array's element type id in the file.
    pub head: usize,
    /// Offset of the first element.
    pub start: usize,
}
