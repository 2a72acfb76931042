//! A `.json` logits file.
//!
//! The file holds an array of numbers, or an array holding exactly one such array (one row).
//! JSON has no infinity or NaN, so an element may also be `null` (NaN, i.e. masked) or one of
//! the strings `"-inf"`, `"inf"`, `"nan"` (any case; the spelling `sieve samplers --json` uses
//! for infinite values).

use anyhow::{bail, Context as _, Result};
use serde_json::Value;

/// Parses the bytes of a `.json` logits file.
///
/// # Errors
/// Malformed JSON, a top level that is not an array (or one row), or an element that is neither
/// a number, `null`, nor one of the accepted strings (named by its 1-based position).
pub(super) fn parse(bytes: &[u8]) -> Result<Vec<f32>> {
    let value: Value = serde_json::from_slice(bytes).context("not valid JSON")?;
    let items = match &value {
        Value::Array(items) => match items.as_slice() {
            [Value::Array(row)] => row,
            _ => items,
        },
        other => bail!("expected a JSON array of numbers, found {}", kind(other)),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| element(item).with_context(|| format!("value {}", i + 1)))
        .collect()
}

/// One element as `f32`.
fn element(item: &Value) -> Result<f32> {
    match item {
        Value::Number(n) => match n.as_f64() {
            Some(x) if (x as f32).is_infinite() => bail!("{n} is too large for a float32"),
            Some(x) => Ok(x as f32),
            None => bail!("{n} is not representable as a float"),
        },
        Value::Null => Ok(f32::NAN),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "-inf" | "-infinity" => Ok(f32::NEG_INFINITY),
            "inf" | "+inf" | "infinity" => Ok(f32::INFINITY),
            "nan" => Ok(f32::NAN),
            _ => {
                bail!("the string {item} is not a number (only \"-inf\", \"inf\" and \"nan\" are)")
            }
        },
        other => bail!(
            "expected a number, null, \"-inf\", \"inf\" or \"nan\", found {}",
            kind(other)
        ),
    }
}

/// A JSON value's kind, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!("{:#}", parse(text.as_bytes()).unwrap_err())
    }

    #[test]
    fn numbers_null_and_named_specials() {
        let got = parse(br#"[1, -2.5, null, "-inf", "INF"]"#).unwrap();
        assert_eq!(got[..2], [1.0, -2.5]);
        assert!(got[2].is_nan());
        assert_eq!(got[3..], [f32::NEG_INFINITY, f32::INFINITY]);
        assert_eq!(parse(b"[[0.5, 1]]").unwrap(), vec![0.5, 1.0]);
        assert_eq!(parse(b"[]").unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn errors_name_the_element() {
        assert_eq!(
            err(r#"[1, true]"#),
            "value 2: expected a number, null, \"-inf\", \"inf\" or \"nan\", found a boolean"
        );
        assert_eq!(
            err(r#"[1, "x"]"#),
            "value 2: the string \"x\" is not a number (only \"-inf\", \"inf\" and \"nan\" are)"
        );
        assert_eq!(
            err(r#"[[1], [2]]"#),
            "value 1: expected a number, null, \"-inf\", \"inf\" or \"nan\", found an array"
        );
        assert_eq!(
            err(r#"{"a": 1}"#),
            "expected a JSON array of numbers, found an object"
        );
        assert_eq!(err("[1e300]"), "value 1: 1e+300 is too large for a float32");
        assert!(err("[1,").starts_with("not valid JSON: "), "{}", err("[1,"));
    }
}
