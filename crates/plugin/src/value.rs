//! Argument values across the boundary: a [`Value`] tree as an [`AbiValue`] tree and back.
//!
//! The encoding is exact: integers stay `i64`, floats stay `f64` (`±inf` included, bit for
//! bit), strings keep every byte (NUL too), lists and maps keep their order and nesting.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ffi::c_void;
use core::marker::PhantomData;

use crate::abi::{kind, AbiArg, AbiStr, AbiValue};
use crate::AbiError;
use sieve_core::{Args, Value};

/// The deepest nesting [`decode`] accepts (the pipeline language allows far less).
pub const MAX_DEPTH: usize = 64;

/// Owns the arrays of an encoded tree; the tree's strings point into the values encoded.
#[derive(Debug, Default)]
pub struct Arena {
    arrays: Vec<Box<[AbiValue]>>,
}

impl Arena {
    /// An empty arena.
    pub fn new() -> Self {
        Arena::default()
    }

    /// Encodes `value`. The result points into `value` (strings) and into `self` (lists and
    /// maps): it is valid while both are alive and `value` is unchanged. Moving the arena is
    /// fine (its arrays are boxed).
    pub fn encode(&mut self, value: &Value) -> AbiValue {
        let mut out = AbiValue {
            kind: 0,
            int: 0,
            float: 0.0,
            ptr: core::ptr::null(),
            len: 0,
        };
        match value {
            Value::Int(i) => {
                out.kind = kind::INT;
                out.int = *i;
            }
            Value::Float(x) => {
                out.kind = kind::FLOAT;
                out.float = *x;
            }
            Value::Bool(b) => {
                out.kind = kind::BOOL;
                out.int = i64::from(*b);
            }
            Value::Str(s) => {
                out.kind = kind::STR;
                out.ptr = s.as_ptr().cast();
                out.len = s.len();
            }
            Value::List(items) => {
                let encoded: Box<[AbiValue]> = items.iter().map(|v| self.encode(v)).collect();
                out.kind = kind::LIST;
                out.ptr = self.keep(encoded);
                out.len = items.len();
            }
            Value::Map(entries) => {
                let encoded: Box<[AbiValue]> = entries
                    .iter()
                    .flat_map(|(k, v)| [self.encode(k), self.encode(v)])
                    .collect();
                out.kind = kind::MAP;
                out.ptr = self.keep(encoded);
                out.len = entries.len();
            }
        }
        out
    }

    fn keep(&mut self, array: Box<[AbiValue]>) -> *const c_void {
        let ptr = array.as_ptr().cast();
        self.arrays.push(array);
        ptr
    }
}

/// A stage's arguments encoded for `create`, borrowing the [`Args`] they came from.
#[derive(Debug)]
pub struct EncodedArgs<'a> {
    args: Vec<AbiArg>,
    _arena: Arena,
    _source: PhantomData<&'a Args>,
}

impl<'a> EncodedArgs<'a> {
    /// Encodes every `(name, value)` of `args`, in order.
    pub fn new(args: &'a Args) -> Self {
        let mut arena = Arena::new();
        let args = args
            .values()
            .iter()
            .map(|(name, value)| AbiArg {
                name: AbiStr::new(name),
                value: arena.encode(value),
            })
            .collect();
        EncodedArgs {
            args,
            _arena: arena,
            _source: PhantomData,
        }
    }
    /// The first argument (dangling but non-null when there is none).
    pub fn as_ptr(&self) -> *const AbiArg {
        self.args.as_ptr()
    }
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.args.len()
    }
    /// Whether there is no argument.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }
}

/// Reads `len` elements at `ptr` (null allowed when `len` is 0).
///
/// # Safety
/// `ptr` must point at `len` initialized `T`s valid for `'a`.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }
}

/// UTF-8 text of `s`, or an [`AbiError::NotUtf8`] naming `what`.
///
/// # Safety
/// As [`AbiStr::as_bytes`].
pub unsafe fn decode_str(s: &AbiStr, what: &'static str) -> Result<String, AbiError> {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { s.as_bytes() };
    core::str::from_utf8(bytes)
        .map(ToString::to_string)
        .map_err(|error| AbiError::NotUtf8 { what, error })
}

/// Decodes a value tree back into a [`Value`].
///
/// # Errors
/// An [`AbiError`] for an unknown kind tag, a null array with a non-zero length, a string that is
/// not UTF-8, a list length that overflows, or nesting deeper than [`MAX_DEPTH`].
///
/// # Safety
/// Every pointer in the tree must point at as many readable, initialized elements as its
/// kind and `len` say, valid for the duration of the call.
pub unsafe fn decode(value: &AbiValue) -> Result<Value, AbiError> {
    // SAFETY: forwarded from the caller.
    unsafe { decode_at(value, 0) }
}

/// [`decode`] at nesting `depth`.
///
/// # Safety
/// As [`decode`].
unsafe fn decode_at(value: &AbiValue, depth: usize) -> Result<Value, AbiError> {
    if depth > MAX_DEPTH {
        return Err(AbiError::TooDeep);
    }
    let check_ptr = |count: usize| -> Result<(), AbiError> {
        if count > 0 && value.ptr.is_null() {
            Err(AbiError::NullValue { kind: value.kind })
        } else {
            Ok(())
        }
    };
    Ok(match value.kind {
        kind::INT => Value::Int(value.int),
        kind::FLOAT => Value::Float(value.float),
        kind::BOOL => match value.int {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            other => return Err(AbiError::NotABool(other)),
        },
        kind::STR => {
            check_ptr(value.len)?;
            let s = AbiStr {
                ptr: value.ptr.cast(),
                len: value.len,
            };
            // SAFETY: a STR value points at `len` bytes (caller's promise).
            Value::Str(unsafe { decode_str(&s, "a string value")? })
        }
        kind::LIST => {
            check_ptr(value.len)?;
            // SAFETY: a LIST value points at `len` values (caller's promise).
            let items = unsafe { slice(value.ptr.cast::<AbiValue>(), value.len) };
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                // SAFETY: the elements are trees under the same promise.
                out.push(unsafe { decode_at(item, depth + 1)? });
            }
            Value::List(out)
        }
        kind::MAP => {
            let n = value
                .len
                .checked_mul(2)
                .ok_or(AbiError::Overflow("map length"))?;
            check_ptr(n)?;
            // SAFETY: a MAP value points at `2 * len` values (caller's promise).
            let items = unsafe { slice(value.ptr.cast::<AbiValue>(), n) };
            let mut out = Vec::with_capacity(value.len);
            for pair in items.chunks_exact(2) {
                // SAFETY: the elements are trees under the same promise.
                let (k, v) = unsafe {
                    (
                        decode_at(&pair[0], depth + 1)?,
                        decode_at(&pair[1], depth + 1)?,
                    )
                };
                out.push((k, v));
            }
            Value::Map(out)
        }
        other => return Err(AbiError::UnknownKind(other)),
    })
}

/// Decodes the arguments of stage `stage` given to `create`.
///
/// # Errors
/// As [`decode`], naming the argument; or a name that is not UTF-8.
///
/// # Safety
/// `args` must point at `n` [`AbiArg`]s (or `n` be 0), each valid as [`decode`] requires.
pub unsafe fn decode_args(stage: &str, args: *const AbiArg, n: usize) -> Result<Args, AbiError> {
    if n > 0 && args.is_null() {
        return Err(AbiError::NullArguments);
    }
    // SAFETY: `args` points at `n` arguments (caller's promise).
    let args = unsafe { slice(args, n) };
    let mut values = Vec::with_capacity(n);
    for arg in args {
        // SAFETY: names and values are valid (caller's promise).
        let name = unsafe { decode_str(&arg.name, "an argument name")? };
        // SAFETY: as above.
        let value = unsafe { decode(&arg.value) }.map_err(|e| AbiError::Argument {
            name: name.clone(),
            source: Box::new(e),
        })?;
        values.push((name, value));
    }
    Ok(Args::new(stage, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn round_trip(v: &Value) -> Value {
        let mut arena = Arena::new();
        let encoded = arena.encode(v);
        // SAFETY: `encoded` points into `v` and `arena`, both alive.
        unsafe { decode(&encoded) }.unwrap()
    }

    #[test]
    fn every_kind_round_trips_exactly() {
        let values = [
            Value::Int(i64::MIN),
            Value::Int(-1),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NEG_INFINITY),
            Value::Float(-0.0),
            Value::Float(0.1),
            Value::Float(f64::MIN_POSITIVE / 4.0),
            Value::Bool(true),
            Value::Bool(false),
            Value::Str(String::new()),
            Value::Str("a\0b\n\"é".into()),
            Value::List(vec![]),
            Value::List(vec![
                Value::Str("\n".into()),
                Value::List(vec![Value::Int(13), Value::Int(25)]),
            ]),
            Value::Map(vec![]),
            Value::Map(vec![
                (Value::Int(13), Value::Float(f64::NEG_INFINITY)),
                (Value::Str("Hello".into()), Value::Float(2.5)),
            ]),
        ];
        for v in &values {
            let back = round_trip(v);
            assert_eq!(&back, v);
            if let (Value::Float(a), Value::Float(b)) = (v, &back) {
                assert_eq!(a.to_bits(), b.to_bits(), "{a}");
            }
        }
    }

    #[test]
    fn args_round_trip_with_names_in_order() {
        let args = Args::new(
            "dry",
            vec![
                ("multiplier".into(), Value::Float(0.8)),
                ("breakers".into(), Value::List(vec![Value::Str(":".into())])),
            ],
        );
        let encoded = EncodedArgs::new(&args);
        // SAFETY: `encoded` borrows `args`, alive.
        let back = unsafe { decode_args("dry", encoded.as_ptr(), encoded.len()) }.unwrap();
        assert_eq!(back, args);
    }

    #[test]
    fn malformed_trees_are_errors() {
        let bad = |kind: u32, int: i64, ptr: *const c_void, len: usize| AbiValue {
            kind,
            int,
            float: 0.0,
            ptr,
            len,
        };
        let null = core::ptr::null();
        // SAFETY: no pointer is read: each tree is rejected before (null with len > 0) or has
        // no pointer at all.
        unsafe {
            assert_eq!(
                decode(&bad(0, 0, null, 0)).unwrap_err().to_string(),
                "unknown value kind 0"
            );
            assert_eq!(
                decode(&bad(99, 0, null, 0)).unwrap_err().to_string(),
                "unknown value kind 99"
            );
            assert!(decode(&bad(kind::BOOL, 2, null, 0))
                .unwrap_err()
                .to_string()
                .contains("neither 0 nor 1"));
            assert!(decode(&bad(kind::LIST, 0, null, 3))
                .unwrap_err()
                .to_string()
                .contains("null pointer"));
            assert!(decode(&bad(kind::MAP, 0, null, usize::MAX))
                .unwrap_err()
                .to_string()
                .contains("overflows"));
            assert_eq!(
                decode(&bad(kind::LIST, 0, null, 0)).unwrap(),
                Value::List(vec![])
            );
        }
        let bytes = [0xffu8, 0xfe];
        let s = bad(kind::STR, 0, bytes.as_ptr().cast(), 2);
        // SAFETY: `s` points at 2 bytes.
        assert!(unsafe { decode(&s) }
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
    }

    #[test]
    fn nesting_is_bounded() {
        let mut v = Value::Int(1);
        for _ in 0..=MAX_DEPTH {
            v = Value::List(vec![v]);
        }
        let mut arena = Arena::new();
        let encoded = arena.encode(&v);
        // SAFETY: `encoded` points into `v` and `arena`, both alive.
        let err = unsafe { decode(&encoded) }.unwrap_err().to_string();
        assert!(err.contains("nested deeper"), "{err}");
    }
}
