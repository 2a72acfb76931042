//! What GGUF's `tokenizer.ggml.model`, `pre` and `add_space_prefix` must say for the text
//! steps of a `tokenizer.json` (normalizer, pre-tokenizer) to run the same in llama.cpp:
//! recognized by structure, never by hashing the ids of a sample text.
//!
//! - **Byte-level BPE** (`gpt2`): the pre-tokenizer is a list of regex splits ending in
//!   byte-level encoding: `ByteLevel` with its own regex (GPT-2's), or a `Sequence` of
//!   `Split` (regex, `Isolated`) and `Digits` steps then `ByteLevel`. The regexes, written as
//!   llama.cpp writes them, must be those of one of the presets the reader builds
//!   ([`super::presets`]), with the same `ignore_merges`; that preset's name is `pre`.
//!   Hugging Face spells the contractions `(?i:'s|'t|…)` where llama.cpp spells them
//!   `(?:'[sS]|'[tT]|…)`; they are read as the same (they differ only on `ſ` and the Kelvin
//!   sign, which case-insensitive matching folds to `s` and `k`: llama.cpp's own difference).
//! - **SentencePiece-style BPE** (`llama`): byte fallback, spaces written `▁` by a
//!   `Replace(" ", "▁")` normalizer, with a `Prepend("▁")` before it (`add_space_prefix`) or
//!   not; or no normalizer and a `Metaspace` pre-tokenizer that prepends `▁` to every piece of
//!   text (`prepend_scheme: always`). A `Split` on a plain space after the replacement splits
//!   nothing (Gemma's) and is accepted.
//!
//! Anything else (another normalizer, a `Metaspace` that prepends only to the start of the
//! text, a regex no preset has) is an error naming the step: llama.cpp would tokenize such
//! text differently.

use serde_json::Value as Json;

use super::presets::{Preset, GPT2};

/// The character SentencePiece writes for a space.
const SPACE: &str = "\u{2581}";

/// The preset names tried, in order, for a byte-level pre-tokenizer: the first whose regexes
/// and `ignore_merges` match is written (names sharing regexes are the same to the reader).
const PRESET_NAMES: &[&str] = &[
    "gpt-2",
    "llama-bpe",
    "dbrx",
    "qwen2",
    "smollm",
    "default",
    "qwen35",
    "minicpm5",
    "laguna",
    "ufakzeka",
    "seed-coder",
    "bailingmoe",
    "exaone-moe",
    "jais-2",
    "tekken",
    "gpt-4o",
    "granite-embed-multi-97m",
    "youtu",
    "falcon",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "spark2_5",
    "bloom",
    "viking",
];

/// How the text steps of a `tokenizer.json` are stated in GGUF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextSteps {
    /// `tokenizer.ggml.model = gpt2` with this `tokenizer.ggml.pre`.
    ByteLevel {
        /// The preset's name.
        pre: &'static str,
    },
    /// `tokenizer.ggml.model = llama` with this `add_space_prefix`.
    SentencePiece {
        /// Whether a `▁` is prepended to every piece of text.
        add_space_prefix: bool,
    },
}

/// A step that cannot be stated: `(the field of tokenizer.json, why)`.
pub(crate) type Refusal = (String, String);

/// Reads the normalizer and pre-tokenizer of `tokenizer` (the whole `tokenizer.json`),
/// given whether its BPE model has byte fallback and `ignore_merges`. `notes` receives the
/// differences accepted (an NFC normalizer: llama.cpp does not normalize, so only text that is
/// not in NFC tokenizes differently).
pub(crate) fn text_steps(
    tokenizer: &Json,
    byte_fallback: bool,
    ignore_merges: bool,
    notes: &mut Vec<String>,
) -> Result<TextSteps, Refusal> {
    let normalizer = tokenizer.get("normalizer").filter(|n| !n.is_null());
    let pre = tokenizer.get("pre_tokenizer").filter(|p| !p.is_null());
    if byte_fallback {
        if ignore_merges {
            return Err(refuse(
                "model.ignore_merges",
                "true with byte fallback: llama.cpp's SentencePiece-style tokenizer always merges",
            ));
        }
        return sentencepiece(normalizer, pre);
    }
    match normalizer {
        None => {}
        Some(n) if kind(n) == "NFC" => notes.push(
            "tokenizer.json's NFC normalizer is not stated in GGUF (llama.cpp does not \
             normalize): text that is not in NFC tokenizes differently"
                .to_string(),
        ),
        Some(n) => {
            return Err(refuse(
                "normalizer",
                format!(
                    "{:?} cannot be stated in GGUF (byte-level BPE is written without one)",
                    kind(n)
                ),
            ))
        }
    }
    let Some(pre) = pre else {
        return Err(refuse(
            "pre_tokenizer",
            "absent: a byte-level BPE vocabulary without byte-level encoding",
        ));
    };
    let regexes = byte_level_regexes(pre)?;
    for name in PRESET_NAMES {
        let Ok(Some(preset)) = Preset::of(name) else {
            continue;
        };
        if preset.ignore_merges == ignore_merges
            && preset.regexes.len() == regexes.len()
            && preset.regexes.iter().zip(&regexes).all(|(a, b)| a == b)
        {
            return Ok(TextSteps::ByteLevel { pre: name });
        }
    }
    Err(refuse(
        "pre_tokenizer",
        format!(
            "no pre-tokenizer llama.cpp knows splits with {regexes:?} (ignore_merges {ignore_merges})"
        ),
    ))
}

/// A refusal of `field`.
fn refuse(field: &str, why: impl Into<String>) -> Refusal {
    (field.to_string(), why.into())
}

/// The `type` of a step.
fn kind(step: &Json) -> &str {
    step.get("type").and_then(Json::as_str).unwrap_or("?")
}

/// Whether `step[field]` is `value` (absent counts as `default`).
fn is(step: &Json, field: &str, value: bool, default: bool) -> bool {
    step.get(field).and_then(Json::as_bool).unwrap_or(default) == value
}

/// The regexes of a byte-level pre-tokenizer, in order, as llama.cpp writes them.
fn byte_level_regexes(pre: &Json) -> Result<Vec<String>, Refusal> {
    let steps: Vec<&Json> = match kind(pre) {
        "Sequence" => pre
            .get("pretokenizers")
            .and_then(Json::as_array)
            .map(|s| s.iter().collect())
            .unwrap_or_default(),
        _ => vec![pre],
    };
    let Some((last, before)) = steps.split_last() else {
        return Err(refuse("pre_tokenizer", "an empty Sequence"));
    };
    if kind(last) != "ByteLevel" {
        return Err(refuse(
            "pre_tokenizer",
            format!(
                "ends with {:?}, not ByteLevel: not byte-level BPE",
                kind(last)
            ),
        ));
    }
    if !is(last, "add_prefix_space", false, true) {
        return Err(refuse(
            "pre_tokenizer",
            "ByteLevel with add_prefix_space: llama.cpp prepends no space",
        ));
    }
    let mut regexes = Vec::with_capacity(steps.len());
    for step in before {
        let regex = match kind(step) {
            "Split" => split_regex(step)?,
            "Digits" if is(step, "individual_digits", true, false) => "\\p{N}".to_string(),
            "Digits" => "\\p{N}+".to_string(),
            other => {
                return Err(refuse(
                    "pre_tokenizer",
                    format!("a {other:?} step, which llama.cpp has no equivalent of"),
                ))
            }
        };
        regexes.push(regex);
    }
    if is(last, "use_regex", true, true) {
        regexes.push(GPT2.to_string());
    }
    Ok(regexes)
}

/// The regex of a `Split` step that keeps its matches as pieces of their own.
fn split_regex(step: &Json) -> Result<String, Refusal> {
    let behavior = step.get("behavior").and_then(Json::as_str).unwrap_or("?");
    if behavior != "Isolated" || !is(step, "invert", false, false) {
        return Err(refuse(
            "pre_tokenizer",
            format!(
                "a Split with behavior {behavior:?}{}: llama.cpp's regexes isolate their matches",
                if is(step, "invert", true, false) {
                    " inverted"
                } else {
                    ""
                }
            ),
        ));
    }
    match step.get("pattern") {
        Some(p) => match (p.get("Regex"), p.get("String")) {
            (Some(Json::String(r)), _) => Ok(as_llama_cpp_writes(r)),
            (_, Some(Json::String(s))) => Ok(escape(s)),
            _ => Err(refuse("pre_tokenizer", "a Split without a pattern")),
        },
        None => Err(refuse("pre_tokenizer", "a Split without a pattern")),
    }
}

/// A Hugging Face regex as llama.cpp writes the same one (the contractions only).
fn as_llama_cpp_writes(regex: &str) -> String {
    regex.replace(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])",
    )
}

/// A literal string as a regex.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The steps of a SentencePiece-style BPE `tokenizer.json`.
fn sentencepiece(normalizer: Option<&Json>, pre: Option<&Json>) -> Result<TextSteps, Refusal> {
    let replaces_spaces = |n: &Json| {
        kind(n) == "Replace"
            && n.get("pattern").and_then(|p| p.get("String")) == Some(&Json::from(" "))
            && n.get("content") == Some(&Json::from(SPACE))
    };
    let prepends = |n: &Json| kind(n) == "Prepend" && n.get("prepend") == Some(&Json::from(SPACE));
    let add_space_prefix = match normalizer {
        Some(n) if replaces_spaces(n) => Some(false),
        Some(n) if kind(n) == "Sequence" => {
            let steps: Vec<&Json> = n
                .get("normalizers")
                .and_then(Json::as_array)
                .map(|s| s.iter().collect())
                .unwrap_or_default();
            match steps.as_slice() {
                [p, r] if prepends(p) && replaces_spaces(r) => Some(true),
                [r] if replaces_spaces(r) => Some(false),
                _ => {
                    return Err(refuse(
                        "normalizer",
                        "a Sequence other than Prepend(\"▁\") then Replace(\" \", \"▁\"), \
                         which GGUF cannot state",
                    ))
                }
            }
        }
        Some(n) => {
            return Err(refuse(
                "normalizer",
                format!("{:?} cannot be stated in GGUF", kind(n)),
            ))
        }
        None => None,
    };
    match (add_space_prefix, pre) {
        (Some(prefix), None) => Ok(TextSteps::SentencePiece {
            add_space_prefix: prefix,
        }),
        (Some(prefix), Some(p))
            if kind(p) == "Split"
                && p.get("pattern").and_then(|p| p.get("String")) == Some(&Json::from(" ")) =>
        {
            // The normalizer left no space to split at.
            Ok(TextSteps::SentencePiece {
                add_space_prefix: prefix,
            })
        }
        (None, Some(p)) if kind(p) == "Metaspace" => {
            let scheme = p
                .get("prepend_scheme")
                .and_then(Json::as_str)
                .unwrap_or("always");
            let replacement = p.get("replacement").and_then(Json::as_str);
            if replacement != Some(SPACE) || !is(p, "split", false, true) {
                return Err(refuse(
                    "pre_tokenizer",
                    "a Metaspace that splits at spaces or writes them other than \"▁\"",
                ));
            }
            match scheme {
                "always" => Ok(TextSteps::SentencePiece {
                    add_space_prefix: true,
                }),
                "never" => Ok(TextSteps::SentencePiece {
                    add_space_prefix: false,
                }),
                other => Err(refuse(
                    "pre_tokenizer",
                    format!(
                        "Metaspace prepend_scheme {other:?}: llama.cpp prepends a space to \
                         every piece of text between special tokens, or to none"
                    ),
                )),
            }
        }
        (None, None) => Err(refuse(
            "normalizer",
            "absent: a byte-fallback BPE vocabulary that does not write spaces as \"▁\"",
        )),
        (_, Some(p)) => Err(refuse(
            "pre_tokenizer",
            format!(
                "{:?} in a SentencePiece-style tokenizer, which GGUF cannot state",
                kind(p)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn steps(t: Json) -> Result<TextSteps, Refusal> {
        text_steps(&t, false, false, &mut Vec::new())
    }

    #[test]
    fn byte_level_pre_tokenizers_are_named_by_their_regexes() {
        let gpt2 = json!({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}});
        assert_eq!(steps(gpt2), Ok(TextSteps::ByteLevel { pre: "gpt-2" }));
        let smollm = json!({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]}});
        assert_eq!(steps(smollm), Ok(TextSteps::ByteLevel { pre: "smollm" }));
        let llama3 = json!({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}});
        let mut notes = Vec::new();
        assert_eq!(
            text_steps(&llama3, false, true, &mut notes),
            Ok(TextSteps::ByteLevel { pre: "llama-bpe" })
        );
        // The same regex without ignore_merges is DBRX's.
        assert_eq!(steps(llama3), Ok(TextSteps::ByteLevel { pre: "dbrx" }));
        let qwen2 = json!({"normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}});
        assert_eq!(
            text_steps(&qwen2, false, false, &mut notes),
            Ok(TextSteps::ByteLevel { pre: "qwen2" })
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn what_llama_cpp_cannot_run_is_refused_naming_the_field() {
        let field = |t: Json| steps(t).unwrap_err().0;
        let odd_regex = json!({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}});
        assert_eq!(field(odd_regex), "pre_tokenizer");
        let prefix = json!({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}});
        assert_eq!(field(prefix), "pre_tokenizer");
        let lower = json!({"normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}});
        assert_eq!(field(lower), "normalizer");
        let whitespace = json!({"pre_tokenizer": {"type": "Whitespace"}});
        assert_eq!(field(whitespace), "pre_tokenizer");
        let first = json!({"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}});
        let e = text_steps(&first, true, false, &mut Vec::new()).unwrap_err();
        assert!(e.1.contains("first"), "{e:?}");
    }

    #[test]
    fn sentencepiece_steps_give_add_space_prefix() {
        let sp = |t: Json| text_steps(&t, true, false, &mut Vec::new());
        let llama2 = json!({"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}});
        assert_eq!(
            sp(llama2),
            Ok(TextSteps::SentencePiece {
                add_space_prefix: true
            })
        );
        let gemma = json!({"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false}});
        assert_eq!(
            sp(gemma),
            Ok(TextSteps::SentencePiece {
                add_space_prefix: false
            })
        );
    }
}
