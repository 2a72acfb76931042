//! Metadata values (`gguf_type` in llama.cpp's `gguf.h`); [`crate::Metadata`] holds a file's
//! pairs and their typed accessors.

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
pub(crate) fn type_name(t: ValueType) -> &'static str {
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
