//! `config.json`'s sizes checked before anything proportional to them is allocated: a
//! family turns `num_hidden_layers` into one config per layer, and the vocabulary the stages
//! see has `vocab_size` entries, so a size of 2^60 must be an error naming the field, not a
//! capacity overflow or an abort.
//!
//! With a checkpoint, every size field that `config.json` writes is checked against the
//! tensors (only their headers are read):
//! - `num_hidden_layers` is at most the number of tensors, and at most one more than the
//!   largest layer index in the names (`….layers.<i>.…`) when the names have any;
//! - `vocab_size`, `hidden_size`, `intermediate_size`, `head_dim`, and `num_attention_heads`
//!   and `num_key_value_heads` times the head width, are each at most the largest dimension
//!   of a non-empty tensor (a dimension a model uses is one of some tensor's dimensions);
//! - `vocab_size` and `hidden_size` equal the shape of `model.embed_tokens.weight` when the
//!   checkpoint has it.
//!
//! Without a checkpoint (a directory read only for its tokenizer and configuration), the sizes
//! are checked against [`LIMITS`], far above any published model.
//!
//! Absent fields take a family's default, a small constant, and are not checked here; the
//! loader checks every tensor's shape against the family's configuration when it reads it.

use std::collections::BTreeSet;
use std::path::Path;

use sieve_text::ConfigJson;

use super::Checkpoint;
use crate::Result;

/// The size fields checked, with the limit each has when the directory has no weights.
pub(crate) const LIMITS: [(&str, u64); 7] = [
    ("vocab_size", 1 << 24),
    ("hidden_size", 1 << 20),
    ("intermediate_size", 1 << 22),
    ("num_hidden_layers", 1 << 12),
    ("num_attention_heads", 1 << 12),
    ("num_key_value_heads", 1 << 12),
    ("head_dim", 1 << 14),
];

/// The tensor whose shape is `[vocab_size, hidden_size]` in every Llama-like checkpoint.
const EMBEDDING: &str = "model.embed_tokens.weight";

/// Checks the size fields of `config` against `checkpoint`, or against [`LIMITS`] when
/// there is none.
///
/// # Errors
/// [`sieve_text::Error::InvalidConfig`] naming `config.json`, the field and what it exceeds.
pub(crate) fn check_sizes(config: &ConfigJson, checkpoint: Option<&Checkpoint>) -> Result<()> {
    // A field of the wrong type is left to the family, whose error names it.
    let field = |name: &str| config.get::<u64>(name).ok().flatten();
    let Some(checkpoint) = checkpoint else {
        for (name, limit) in LIMITS {
            if let Some(value) = field(name) {
                if value > limit {
                    return Err(config.invalid(format!(
                        "`{name}` ({value}) exceeds {limit}, the limit checked when the directory has no weights"
                    )));
                }
            }
        }
        return Ok(());
    };
    let mut tensors = 0u64;
    let mut largest: Option<(u64, &Path, &str)> = None;
    let mut layers = BTreeSet::new();
    let mut embedding = None;
    for (path, name, shape) in checkpoint.shapes() {
        tensors += 1;
        if !shape.contains(&0) {
            let dim = shape.iter().copied().max().unwrap_or(1) as u64;
            if largest.is_none_or(|(d, _, _)| dim > d) {
                largest = Some((dim, path, name));
            }
        }
        if let Some(i) = layer_index(name) {
            layers.insert(i);
        }
        if name == EMBEDDING {
            embedding = Some((path, shape));
        }
    }
    let (largest, largest_file, largest_name) = largest.unwrap_or((0, Path::new(""), ""));
    let exceeds = |name: &str, what: &str, value: u64| {
        config.invalid(format!("`{name}` ({value}) exceeds {what}"))
    };
    if let Some(n) = field("num_hidden_layers") {
        if n > tensors {
            return Err(exceeds(
                "num_hidden_layers",
                &format!("the number of tensors in the checkpoint ({tensors})"),
                n,
            ));
        }
        if let Some(&last) = layers.last() {
            if n > last + 1 {
                return Err(exceeds(
                    "num_hidden_layers",
                    &format!("the layers the checkpoint's tensors hold (0..={last})"),
                    n,
                ));
            }
        }
    }
    let head_dim = field("head_dim").unwrap_or(1);
    let products = [
        ("vocab_size", field("vocab_size")),
        ("hidden_size", field("hidden_size")),
        ("intermediate_size", field("intermediate_size")),
        ("head_dim", field("head_dim")),
        (
            "num_attention_heads",
            field("num_attention_heads").map(|h| h.saturating_mul(head_dim)),
        ),
        (
            "num_key_value_heads",
            field("num_key_value_heads").map(|h| h.saturating_mul(head_dim)),
        ),
    ];
    for (name, value) in products {
        if let Some(value) = value.filter(|&v| v > largest) {
            let shown = field(name).unwrap_or(value);
            let name = if value == shown {
                format!("`{name}`")
            } else {
                format!("`{name}` times `head_dim` ({head_dim})")
            };
            return Err(config.invalid(format!(
                "{name} ({shown}) exceeds the largest dimension of a tensor in the checkpoint ({largest}, tensor `{largest_name}` in {})",
                largest_file.display()
            )));
        }
    }
    if let Some((path, shape)) = embedding {
        for (i, name) in ["vocab_size", "hidden_size"].into_iter().enumerate() {
            if let (Some(value), Some(&dim)) = (field(name), shape.get(i)) {
                if value != dim as u64 || shape.len() != 2 {
                    return Err(config.invalid(format!(
                        "`{name}` ({value}) does not match tensor `{EMBEDDING}` of shape {shape:?} in {}",
                        path.display()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// `i` in a tensor name `….layers.<i>.…`.
fn layer_index(name: &str) -> Option<u64> {
    let rest = &name[name.find("layers.")? + "layers.".len()..];
    let digits = rest.split('.').next()?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> ConfigJson {
        ConfigJson::from_json(Path::new("config.json"), text).unwrap()
    }

    #[test]
    fn layer_indices_are_read_from_names() {
        assert_eq!(layer_index("model.layers.12.mlp.up_proj.weight"), Some(12));
        assert_eq!(layer_index("model.norm.weight"), None);
        assert_eq!(layer_index("model.layers.x.y"), None);
    }

    #[test]
    fn without_weights_sizes_meet_the_limits() {
        assert!(check_sizes(&config(r#"{"num_hidden_layers": 30}"#), None).is_ok());
        let e = check_sizes(
            &config(r#"{"num_hidden_layers": 1152921504606846976}"#),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("config.json") && e.contains("`num_hidden_layers`"),
            "{e}"
        );
        // A field of the wrong type is the family's to report.
        assert!(check_sizes(&config(r#"{"vocab_size": "x"}"#), None).is_ok());
    }
}
