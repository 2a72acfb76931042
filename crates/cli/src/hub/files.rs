//! Which files of a repository sieve needs: the configuration, the tokenizer, the generation
//! defaults and chat template when the repository has them, and the weights (the single
//! `model.safetensors`, or the index and every shard it names) — or the one GGUF file asked
//! for. Nothing else is downloaded (no other format's weights, no README, no ONNX export).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context as _};

/// The configuration.
pub const CONFIG: &str = "config.json";
/// The tokenizer.
pub const TOKENIZER: &str = "tokenizer.json";
/// The weights in one file.
pub const SINGLE: &str = "model.safetensors";
/// The index of sharded weights.
pub const INDEX: &str = "model.safetensors.index.json";
/// Read when present: special tokens and the chat template, the generation defaults, the
/// chat template as its own file.
pub const OPTIONAL: [&str; 3] = [
    "tokenizer_config.json",
    "generation_config.json",
    "chat_template.jinja",
];

/// One thing a snapshot must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// This file (relative to the snapshot).
    Required(String),
    /// Something that cannot be told from the files (an unreadable index), said in words.
    Broken(String),
}

/// What a cached snapshot directory must hold to open as a model: the configuration, the
/// tokenizer and the weights (the shards its index names, when it has an index and no single
/// file).
pub fn required_in_snapshot(snapshot: &Path) -> Vec<Need> {
    let mut needs = vec![
        Need::Required(CONFIG.to_string()),
        Need::Required(TOKENIZER.to_string()),
    ];
    let index = snapshot.join(INDEX);
    if snapshot.join(SINGLE).is_file() || !index.is_file() {
        needs.push(Need::Required(SINGLE.to_string()));
        return needs;
    }
    match shards_of_index(&index) {
        Ok(shards) => needs.extend(shards.into_iter().map(Need::Required)),
        Err(e) => needs.push(Need::Broken(format!("{INDEX} ({e:#})"))),
    }
    needs
}

/// The files to download from a repository listing `listed`: for a GGUF name, that file;
/// else the configuration, the tokenizer, the optional files the repository has, and the
/// single weights file or the index (whose shards come after it is read: [`shards_of_index`]).
///
/// # Errors
/// A file the model needs that the repository does not have, said with what it has instead.
pub fn wanted(listed: &[String], gguf: Option<&str>, repo: &str) -> anyhow::Result<Vec<String>> {
    let has = |file: &str| listed.iter().any(|l| l == file);
    if let Some(file) = gguf {
        if !has(file) {
            bail!(
                "{repo} has no file {file}{}",
                list_of(" (its GGUF files: ", listed, ".gguf", ")")
            );
        }
        return Ok(vec![file.to_string()]);
    }
    let mut files = Vec::new();
    for file in [CONFIG, TOKENIZER] {
        if !has(file) {
            bail!("{repo} has no {file}, which sieve needs to run a model");
        }
        files.push(file.to_string());
    }
    files.extend(OPTIONAL.iter().filter(|f| has(f)).map(|f| f.to_string()));
    if has(SINGLE) {
        files.push(SINGLE.to_string());
    } else if has(INDEX) {
        files.push(INDEX.to_string());
    } else {
        bail!(
            "{repo} has no safetensors weights ({SINGLE} or {INDEX}){}",
            list_of(
                "; to run one of its GGUF files, name it as org/name:FILE.gguf (",
                listed,
                ".gguf",
                ")"
            )
        );
    }
    Ok(files)
}

/// The shard file names the index at `path` lists in its `weight_map`, each once, in order.
///
/// # Errors
/// An unreadable or malformed index, or a shard name that leaves the directory.
pub fn shards_of_index(path: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let index: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let Some(map) = index.get("weight_map").and_then(|m| m.as_object()) else {
        bail!("{} has no \"weight_map\" object", path.display());
    };
    let mut shards = BTreeSet::new();
    for (tensor, file) in map {
        let Some(file) = file.as_str() else {
            bail!("the weight_map entry of {tensor} is not a file name");
        };
        if file.is_empty()
            || file.starts_with('/')
            || file.split(['/', '\\']).any(|p| p.is_empty() || p == "..")
        {
            bail!("the weight_map entry of {tensor} ({file:?}) is not a file of the repository");
        }
        shards.insert(file.to_string());
    }
    if shards.is_empty() {
        bail!("{} lists no shard", path.display());
    }
    Ok(shards.into_iter().collect())
}

/// `before` + the listed files ending in `ext` (comma-separated, at most 8) + `after`, or
/// nothing when there is none.
fn list_of(before: &str, listed: &[String], ext: &str, after: &str) -> String {
    let found: Vec<&str> = listed
        .iter()
        .filter(|f| f.to_ascii_lowercase().ends_with(ext))
        .map(String::as_str)
        .take(8)
        .collect();
    if found.is_empty() {
        String::new()
    } else {
        format!("{before}{}{after}", found.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(files: &[&str]) -> Vec<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn only_the_needed_files_are_wanted() {
        let listed = listing(&[
            ".gitattributes",
            "README.md",
            "config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "model.safetensors",
            "onnx/model.onnx",
            "pytorch_model.bin",
        ]);
        assert_eq!(
            wanted(&listed, None, "o/m").unwrap(),
            [
                "config.json",
                "tokenizer.json",
                "tokenizer_config.json",
                "model.safetensors"
            ]
        );
        let sharded = listing(&["config.json", "tokenizer.json", INDEX, "a.safetensors"]);
        assert_eq!(
            wanted(&sharded, None, "o/m").unwrap().last().unwrap(),
            INDEX
        );
    }

    #[test]
    fn what_is_missing_is_said() {
        let gguf_only = listing(&[
            "config.json",
            "tokenizer.json",
            "m-Q4_0.gguf",
            "m-Q8_0.gguf",
        ]);
        let err = wanted(&gguf_only, None, "o/m").unwrap_err().to_string();
        assert!(err.contains("no safetensors weights"), "{err}");
        assert!(err.contains("(m-Q4_0.gguf, m-Q8_0.gguf)"), "{err}");
        assert_eq!(
            wanted(&gguf_only, Some("m-Q8_0.gguf"), "o/m").unwrap(),
            ["m-Q8_0.gguf"]
        );
        let err = wanted(&gguf_only, Some("x.gguf"), "o/m")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "o/m has no file x.gguf (its GGUF files: m-Q4_0.gguf, m-Q8_0.gguf)"
        );
        let err = wanted(&listing(&["config.json"]), None, "o/m")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "o/m has no tokenizer.json, which sieve needs to run a model"
        );
    }

    #[test]
    fn index_shards_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(INDEX);
        std::fs::write(
            &index,
            r#"{"metadata": {}, "weight_map": {"a": "s-2.safetensors", "b": "s-1.safetensors", "c": "s-2.safetensors"}}"#,
        )
        .unwrap();
        assert_eq!(
            shards_of_index(&index).unwrap(),
            ["s-1.safetensors", "s-2.safetensors"]
        );
        let needs = required_in_snapshot(dir.path());
        assert_eq!(needs[2], Need::Required("s-1.safetensors".into()));
        std::fs::write(&index, r#"{"weight_map": {"a": "../x"}}"#).unwrap();
        assert!(shards_of_index(&index).is_err());
        assert!(matches!(
            &required_in_snapshot(dir.path())[2],
            Need::Broken(_)
        ));
    }
}
