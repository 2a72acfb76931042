//! Writing GGUF v3 files: metadata pairs in the order given, tensor infos, then each
//! tensor's bytes at an offset padded to the alignment (`general.alignment` when the caller
//! sets it, else 32), as llama.cpp's `gguf_write_to_file` lays them out.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::ggml_type::GgmlType;
use crate::reader::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAGIC};
use crate::value::{Value, ValueType};
use crate::{Error, Result};

/// A tensor to write.
struct Pending<'a> {
    name: String,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    bytes: Cow<'a, [u8]>,
}

/// Collects metadata and tensors, then writes them as one GGUF v3 file.
#[derive(Default)]
pub struct Writer<'a> {
    metadata: Vec<(String, Value)>,
    tensors: Vec<Pending<'a>>,
    names: HashSet<String>,
}

impl<'a> Writer<'a> {
    /// An empty file.
    pub fn new() -> Self {
        Writer::default()
    }

    /// Adds the pair `key` = `value` (replacing an earlier value of `key`).
    pub fn metadata(&mut self, key: impl Into<String>, value: Value) -> &mut Self {
        let key = key.into();
        match self.metadata.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.metadata.push((key, value)),
        }
        self
    }

    /// Adds a tensor of `ggml_type` with GGML dims `dims` (`dims[0]` the row length) and its
    /// little-endian `bytes`.
    ///
    /// # Errors
    /// [`Error::Write`] for a name already added, no or more than four dims, a row length
    /// that is not a multiple of the type's block, or bytes of another length than the type
    /// and dims need.
    pub fn tensor(
        &mut self,
        name: impl Into<String>,
        ggml_type: GgmlType,
        dims: &[u64],
        bytes: impl Into<Cow<'a, [u8]>>,
    ) -> Result<&mut Self> {
        let name = name.into();
        let bytes = bytes.into();
        let bad = |m: String| Error::Write {
            message: format!("tensor `{name}`: {m}"),
        };
        if dims.is_empty() || dims.len() > 4 {
            return Err(bad(format!("{} dims, expected 1 to 4", dims.len())));
        }
        let size = ggml_type
            .row_bytes(dims[0])
            .and_then(|r| dims[1..].iter().try_fold(r, |n, &d| n.checked_mul(d)))
            .ok_or_else(|| bad(format!("dims {dims:?} do not fit {ggml_type}'s blocks")))?;
        if size != bytes.len() as u64 {
            return Err(bad(format!(
                "{} bytes given, {ggml_type} of dims {dims:?} needs {size}",
                bytes.len()
            )));
        }
        if !self.names.insert(name.clone()) {
            return Err(bad("added twice".into()));
        }
        self.tensors.push(Pending {
            name,
            dims: dims.to_vec(),
            ggml_type,
            bytes,
        });
        Ok(self)
    }

    /// The alignment the file will use.
    fn alignment(&self) -> Result<u64> {
        match self.metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY) {
            None => Ok(DEFAULT_ALIGNMENT),
            Some((_, Value::U32(a))) if *a > 0 && a.is_power_of_two() => Ok(u64::from(*a)),
            Some((_, v)) => Err(Error::Write {
                message: format!("`{ALIGNMENT_KEY}` {v:?} is not a power of two as u32"),
            }),
        }
    }

    /// Writes the file to `out`.
    ///
    /// # Errors
    /// [`Error::Write`] for a bad `general.alignment` or an array mixing element types;
    /// [`Error::Io`] (named `<stream>`) when writing fails.
    pub fn write_to(&self, out: &mut impl Write) -> Result<()> {
        let alignment = self.alignment()?;
        let mut head = Vec::new();
        head.extend_from_slice(&MAGIC.to_le_bytes());
        head.extend_from_slice(&3u32.to_le_bytes());
        head.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        head.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut head, key);
            head.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut head, value, key)?;
        }
        let mut offset = 0u64;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            put_string(&mut head, &t.name);
            head.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                head.extend_from_slice(&d.to_le_bytes());
            }
            head.extend_from_slice(&t.ggml_type.id().to_le_bytes());
            head.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + t.bytes.len() as u64).next_multiple_of(alignment);
        }
        pad(&mut head, alignment);
        let io = |source| Error::Io {
            path: "<stream>".into(),
            source,
        };
        out.write_all(&head).map_err(io)?;
        let mut written = 0u64;
        for (t, &at) in self.tensors.iter().zip(&offsets) {
            out.write_all(&vec![0u8; (at - written) as usize])
                .map_err(io)?;
            out.write_all(&t.bytes).map_err(io)?;
            written = at + t.bytes.len() as u64;
        }
        let end = written.next_multiple_of(alignment);
        out.write_all(&vec![0u8; (end - written) as usize])
            .map_err(io)?;
        out.flush().map_err(io)
    }

    /// Writes the file to `path` (created or truncated).
    ///
    /// # Errors
    /// As [`Writer::write_to`], with [`Error::Io`] naming `path`.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        self.write_to(&mut out).map_err(|e| match e {
            Error::Io { source, .. } => io(source),
            e => e,
        })
    }

    /// The file as bytes.
    ///
    /// # Errors
    /// As [`Writer::write_to`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }
}

fn pad(buf: &mut Vec<u8>, alignment: u64) {
    let len = (buf.len() as u64).next_multiple_of(alignment) as usize;
    buf.resize(len, 0);
}

fn put_string(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

fn put_value(buf: &mut Vec<u8>, value: &Value, key: &str) -> Result<()> {
    match value {
        Value::U8(v) => buf.push(*v),
        Value::I8(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::U16(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::U64(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => buf.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => buf.push(u8::from(*v)),
        Value::String(s) => put_string(buf, s),
        Value::Array(t, items) => {
            buf.extend_from_slice(&t.id().to_le_bytes());
            buf.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                if item.value_type() != *t {
                    return Err(Error::Write {
                        message: format!(
                            "metadata `{key}`: an array of {t:?} holds a {:?}",
                            item.value_type()
                        ),
                    });
                }
                put_value(buf, item, key)?;
            }
        }
    }
    Ok(())
}

impl Value {
    /// An array of strings.
    pub fn strings<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
        Value::Array(
            ValueType::String,
            items
                .into_iter()
                .map(|s| Value::String(s.as_ref().to_string()))
                .collect(),
        )
    }

    /// An array of `f32`.
    pub fn f32s(items: impl IntoIterator<Item = f32>) -> Value {
        Value::Array(ValueType::F32, items.into_iter().map(Value::F32).collect())
    }

    /// An array of `i32`.
    pub fn i32s(items: impl IntoIterator<Item = i32>) -> Value {
        Value::Array(ValueType::I32, items.into_iter().map(Value::I32).collect())
    }
}
