//! The RoPE fields of `config.json`: `rope_theta` and `rope_scaling` (transformers 4.x) or
//! `rope_parameters` (transformers 5), read into the base and a [`RopeScaling`]. Shared by
//! every family.
//!
//! transformers 5 may give `rope_parameters` per layer type (`{"full_attention": {…},
//! "sliding_attention": {…}}`, Gemma 3): [`read_rope`] reads the `full_attention` entry, and
//! [`read_local_rope`] the `sliding_attention` one.

use std::path::Path;

use serde_json::Value;

use crate::model::RopeScaling;
use crate::{Error, Result};
use sieve_text::ConfigJson;

/// Reads `(rope_theta, scaling)` of `config` (see [`parse_rope`]), with `default_theta` when
/// the file gives no base.
///
/// # Errors
/// As [`parse_rope`], and [`sieve_text::Error::Json`] for a `rope_theta` that is not a number.
pub(crate) fn read_rope(config: &ConfigJson, default_theta: f64) -> Result<(f64, RopeScaling)> {
    parse_rope(
        config.path(),
        config.get("rope_theta")?,
        config.raw("rope_scaling"),
        config.raw("rope_parameters"),
        default_theta,
    )
}

/// The `sliding_attention` entry of a per-layer-type `rope_parameters`, read as
/// [`parse_rope`] reads one, or `None` when `rope_parameters` is not given per layer type.
///
/// # Errors
/// As [`parse_rope`].
pub(crate) fn read_local_rope(
    config: &ConfigJson,
    default_theta: f64,
) -> Result<Option<(f64, RopeScaling)>> {
    match config
        .raw("rope_parameters")
        .and_then(|v| v.get("sliding_attention"))
    {
        Some(v) => parse_rope(config.path(), None, None, Some(v), default_theta).map(Some),
        None => Ok(None),
    }
}

const SUPPORTED: &str = "default, linear, llama3";

/// Reads `(rope_theta, scaling)`; `rope_parameters` wins over the 4.x fields when present.
///
/// # Errors
/// [`sieve_text::Error::Json`] for fields of the wrong type,
/// [`sieve_text::Error::InvalidConfig`] for a scaling type this crate does not implement
/// (naming the field and the supported ones) or values no model can have.
pub(crate) fn parse_rope(
    path: &Path,
    rope_theta: Option<f64>,
    rope_scaling: Option<&Value>,
    rope_parameters: Option<&Value>,
    default_theta: f64,
) -> Result<(f64, RopeScaling)> {
    let rope_parameters = match rope_parameters {
        Some(Value::Object(map)) if map.contains_key("full_attention") => map.get("full_attention"),
        other => other,
    };
    let (theta, scaling) = match rope_parameters {
        Some(Value::Object(map)) => {
            let theta = match map.get("rope_theta") {
                Some(v) => Some(number(path, "rope_parameters.rope_theta", v)?),
                None => rope_theta,
            };
            (theta, scaling_of(path, "rope_parameters", map)?)
        }
        Some(Value::Null) | None => {
            let scaling = match rope_scaling {
                Some(Value::Object(map)) => scaling_of(path, "rope_scaling", map)?,
                Some(Value::Null) | None => RopeScaling::None,
                Some(_) => return Err(type_error(path, "rope_scaling", "an object or null")),
            };
            (rope_theta, scaling)
        }
        Some(_) => return Err(type_error(path, "rope_parameters", "an object or null")),
    };
    let theta = theta.unwrap_or(default_theta);
    if !(theta.is_finite() && theta > 0.0) {
        return Err(invalid(
            path,
            format!("`rope_theta` ({theta}) must be positive"),
        ));
    }
    Ok((theta, scaling))
}

fn type_error(path: &Path, field: &str, expected: &str) -> Error {
    Error::Text(sieve_text::Error::Json {
        path: path.to_path_buf(),
        field: Some(field.to_string()),
        message: format!("expected {expected}"),
    })
}

fn invalid(path: &Path, message: String) -> Error {
    Error::Text(sieve_text::Error::InvalidConfig {
        path: path.to_path_buf(),
        message,
    })
}

fn number(path: &Path, field: &str, v: &Value) -> Result<f64> {
    v.as_f64()
        .ok_or_else(|| type_error(path, field, "a number"))
}

fn scaling_of(
    path: &Path,
    field: &str,
    map: &serde_json::Map<String, Value>,
) -> Result<RopeScaling> {
    let kind = match map.get("rope_type").or_else(|| map.get("type")) {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(type_error(path, &format!("{field}.rope_type"), "a string")),
        None => "default",
    };
    let get = |name: &str| -> Result<f64> {
        let full = format!("{field}.{name}");
        let v = map
            .get(name)
            .ok_or_else(|| invalid(path, format!("`{full}` is required for `{kind}` scaling")))?;
        let x = number(path, &full, v)?;
        if !(x.is_finite() && x > 0.0) {
            return Err(invalid(path, format!("`{full}` ({x}) must be positive")));
        }
        Ok(x)
    };
    match kind {
        "default" => Ok(RopeScaling::None),
        "linear" => Ok(RopeScaling::Linear {
            factor: get("factor")?,
        }),
        "llama3" => {
            let scaling = RopeScaling::Llama3 {
                factor: get("factor")?,
                low_freq_factor: get("low_freq_factor")?,
                high_freq_factor: get("high_freq_factor")?,
                original_max_position_embeddings: get("original_max_position_embeddings")?,
            };
            if let RopeScaling::Llama3 {
                low_freq_factor,
                high_freq_factor,
                ..
            } = scaling
            {
                if low_freq_factor >= high_freq_factor {
                    return Err(invalid(
                        path,
                        format!("`{field}.low_freq_factor` must be below `high_freq_factor`"),
                    ));
                }
            }
            Ok(scaling)
        }
        other => Err(invalid(
            path,
            format!("`{field}` type `{other}` is not supported (supported: {SUPPORTED})"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p() -> &'static Path {
        Path::new("config.json")
    }

    #[test]
    fn absent_or_null_scaling_is_plain_rope() {
        assert_eq!(
            parse_rope(p(), None, None, None, 1e4).unwrap(),
            (10000.0, RopeScaling::None)
        );
        let null = Value::Null;
        assert_eq!(
            parse_rope(p(), Some(5e5), Some(&null), None, 1e4).unwrap(),
            (5e5, RopeScaling::None)
        );
    }

    #[test]
    fn llama3_and_linear_are_read_with_either_type_key() {
        let v = json!({"rope_type": "llama3", "factor": 32, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192});
        let (_, s) = parse_rope(p(), Some(5e5), Some(&v), None, 1e4).unwrap();
        assert_eq!(
            s,
            RopeScaling::Llama3 {
                factor: 32.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 8192.0
            }
        );
        let v = json!({"type": "linear", "factor": 2.0});
        assert_eq!(
            parse_rope(p(), None, Some(&v), None, 1e4).unwrap().1,
            RopeScaling::Linear { factor: 2.0 }
        );
    }

    #[test]
    fn transformers_5_rope_parameters_are_read() {
        let v = json!({"rope_type": "default", "rope_theta": 1e6});
        assert_eq!(
            parse_rope(p(), None, None, Some(&v), 1e4).unwrap(),
            (1e6, RopeScaling::None)
        );
    }

    #[test]
    fn per_layer_type_parameters_are_read_for_full_attention() {
        let v = json!({"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                       "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}});
        assert_eq!(
            parse_rope(p(), None, None, Some(&v), 1.0).unwrap(),
            (1e6, RopeScaling::Linear { factor: 8.0 })
        );
    }

    #[test]
    fn unsupported_or_malformed_scaling_is_an_error() {
        let v = json!({"rope_type": "yarn", "factor": 4.0});
        let e = parse_rope(p(), None, Some(&v), None, 1e4).unwrap_err();
        assert!(
            e.to_string().contains("yarn") && e.to_string().contains(SUPPORTED),
            "{e}"
        );
        let v = json!({"rope_type": "linear", "factor": "2"});
        let e = parse_rope(p(), None, Some(&v), None, 1e4).unwrap_err();
        assert!(e.to_string().contains("rope_scaling.factor"), "{e}");
        let v = json!({"rope_type": "llama3", "factor": 8.0});
        let e = parse_rope(p(), None, Some(&v), None, 1e4).unwrap_err();
        assert!(e.to_string().contains("low_freq_factor"), "{e}");
        let v = json!({"rope_type": "linear", "factor": 0});
        assert!(parse_rope(p(), None, Some(&v), None, 1e4).is_err());
        assert!(parse_rope(p(), Some(-1.0), None, None, 1e4).is_err());
        assert!(parse_rope(p(), None, Some(&json!(3)), None, 1e4).is_err());
    }
}
