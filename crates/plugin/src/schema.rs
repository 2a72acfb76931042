//! Parameter schemas across the boundary: a [`ParamSpec`] as an [`AbiParam`] and back.

use alloc::boxed::Box;

use crate::AbiError;

use crate::abi::{param_kind, AbiParam, AbiStr, AbiValue};
use crate::value::{decode, decode_str, Arena};
use sieve_core::{ParamKind, ParamSpec, Range};

/// The tag of `kind`.
pub fn kind_tag(kind: ParamKind) -> u32 {
    match kind {
        ParamKind::Float => param_kind::FLOAT,
        ParamKind::Int => param_kind::INT,
        ParamKind::Bool => param_kind::BOOL,
        ParamKind::Str => param_kind::STR,
        ParamKind::List => param_kind::LIST,
        ParamKind::Map => param_kind::MAP,
    }
}

/// The kind of tag `tag`, if it is one.
pub fn kind_of_tag(tag: u32) -> Option<ParamKind> {
    Some(match tag {
        param_kind::FLOAT => ParamKind::Float,
        param_kind::INT => ParamKind::Int,
        param_kind::BOOL => ParamKind::Bool,
        param_kind::STR => ParamKind::Str,
        param_kind::LIST => ParamKind::List,
        param_kind::MAP => ParamKind::Map,
        _ => return None,
    })
}

/// Encodes `spec`; the result points into `spec` and `arena` (valid while both are alive and
/// `spec` is unchanged).
pub fn encode_param(spec: &ParamSpec, arena: &mut Arena) -> AbiParam {
    let (has_range, range) = match spec.range {
        Some(r) => (1, r),
        None => (0, Range::closed(0.0, 0.0)),
    };
    let default = match &spec.default {
        Some(v) => arena.encode(v),
        None => AbiValue {
            kind: 0,
            int: 0,
            float: 0.0,
            ptr: core::ptr::null(),
            len: 0,
        },
    };
    AbiParam {
        struct_size: core::mem::size_of::<AbiParam>(),
        name: AbiStr::new(&spec.name),
        kind: kind_tag(spec.kind),
        has_default: u8::from(spec.default.is_some()),
        has_range,
        range_min_inclusive: u8::from(range.min_inclusive),
        range_max_inclusive: u8::from(range.max_inclusive),
        default,
        range_min: range.min,
        range_max: range.max,
        doc: AbiStr::new(&spec.doc),
    }
}

/// Decodes and checks a parameter: its name is an identifier, its kind known, its range
/// ordered and not NaN, its default of the right type and inside the range.
///
/// # Errors
/// A message saying what is wrong.
///
/// # Safety
/// `p`'s strings and default must be valid as [`decode`] and [`AbiStr::as_bytes`] require.
pub unsafe fn decode_param(p: &AbiParam) -> Result<ParamSpec, AbiError> {
    // SAFETY: forwarded from the caller.
    let name = unsafe { decode_str(&p.name, "a parameter name")? };
    if !is_identifier(&name) {
        return Err(AbiError::NotAnIdentifier(name));
    }
    // SAFETY: forwarded from the caller.
    let doc = unsafe { decode_str(&p.doc, "a parameter doc")? };
    let kind = kind_of_tag(p.kind).ok_or_else(|| AbiError::UnknownParamKind {
        name: name.clone(),
        kind: p.kind,
    })?;
    let mut spec = ParamSpec::new(&name, kind, &doc);
    if p.has_range != 0 {
        let range = Range {
            min: p.range_min,
            max: p.range_max,
            min_inclusive: p.range_min_inclusive != 0,
            max_inclusive: p.range_max_inclusive != 0,
        };
        if range.min.is_nan() || range.max.is_nan() || range.min > range.max {
            return Err(AbiError::InvalidRange { name, range });
        }
        spec = spec.with_range(range);
    }
    if p.has_default != 0 {
        // SAFETY: forwarded from the caller.
        let default = unsafe { decode(&p.default) }.map_err(|e| AbiError::BadDefault {
            name: name.clone(),
            source: Box::new(e),
        })?;
        spec.check(&default)
            .map_err(|source| AbiError::DefaultRefused { name, source })?;
        spec = spec.with_default(default);
    }
    Ok(spec)
}

/// Whether `s` can be written as a name in a pipeline: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;
    use alloc::vec;

    fn round_trip(spec: &ParamSpec) -> Result<ParamSpec, AbiError> {
        let mut arena = Arena::new();
        let p = encode_param(spec, &mut arena);
        // SAFETY: `p` points into `spec` and `arena`, both alive.
        unsafe { decode_param(&p) }
    }

    #[test]
    fn specs_round_trip() {
        let specs = [
            ParamSpec::float(
                "n",
                1.0,
                Range::open(f64::NEG_INFINITY, f64::INFINITY),
                "sigmas",
            ),
            ParamSpec::int("last_n", -1, Range::at_least(-1.0), "window; -1 = all"),
            ParamSpec::new("breakers", ParamKind::List, "breakers")
                .with_default(Value::List(vec![Value::Str("\n".into())])),
            ParamSpec::new("required", ParamKind::Str, ""),
            ParamSpec::new("m", ParamKind::Map, "m").with_default(Value::Map(vec![])),
            ParamSpec::new("b", ParamKind::Bool, "b").with_default(Value::Bool(false)),
        ];
        for spec in &specs {
            assert_eq!(round_trip(spec).as_ref(), Ok(spec));
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        let err = round_trip(&ParamSpec::new("2x", ParamKind::Int, ""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an identifier"), "{err}");
        let err = round_trip(&ParamSpec::float("p", 2.0, Range::closed(0.0, 1.0), ""))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "parameter `p`: default: `p` = 2.0 is out of range; valid range is [0, 1]"
        );
        let err = round_trip(
            &ParamSpec::new("k", ParamKind::Int, "").with_default(Value::Str("x".into())),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("must be an integer"), "{err}");
        let err = round_trip(&ParamSpec::float("p", 0.5, Range::closed(1.0, 0.0), ""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid range"), "{err}");
        let mut arena = Arena::new();
        let spec = ParamSpec::new("k", ParamKind::Int, "");
        let mut p = encode_param(&spec, &mut arena);
        p.kind = 42;
        // SAFETY: `p` points into a live spec and arena.
        assert!(unsafe { decode_param(&p) }
            .unwrap_err()
            .to_string()
            .contains("unknown kind 42"));
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("top_n_sigma") && is_identifier("_x1"));
        assert!(!is_identifier("") && !is_identifier("a-b") && !is_identifier("1a"));
        assert!(!is_identifier("é"));
    }
}
