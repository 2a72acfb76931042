//! `tokenize FILE.gguf CORPUS.json OUT.json`: llama.cpp's ids for a corpus of texts.

use serde_json::{json, Value};

use crate::args::Args;
use crate::engine::Engine;
use crate::error::{io, Error, Result};

/// Reads the corpus (a JSON array of strings), tokenizes every text three ways and writes
/// the JSON described in README.md.
pub fn run(engine: &Engine, mut args: Args) -> Result<()> {
    let file = args.positional("FILE.gguf")?;
    let corpus_path = args.positional("CORPUS.json")?;
    let out = args.positional("OUT.json")?;
    args.finish()?;

    let texts = read_corpus(&corpus_path)?;
    let model = engine.load_vocab(&file)?;
    let vocab = model.vocab();
    let ids = |text: &str, add_special: bool, parse_special: bool| -> Vec<i32> {
        vocab
            .tokenize(text.as_bytes(), add_special, parse_special)
            .into_iter()
            .map(|t| t.0)
            .collect()
    };
    let cases: Vec<Value> = texts
        .iter()
        .map(|text| {
            json!({
                "text": text,
                "plain": ids(text, false, false),
                "special": ids(text, false, true),
                "add_special": ids(text, true, true),
            })
        })
        .collect();
    let doc = json!({
        "model": file_name(&file),
        "made_by": format!("llama.cpp {} via tools/llamacpp", crate::info::version()),
        "add_bos": vocab.should_add_bos(),
        "bos": vocab.bos().0,
        "eos": vocab.eos().0,
        "n_vocab": vocab.n_tokens(),
        "cases": cases,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Json {
        path: out.clone(),
        message: e.to_string(),
    })?;
    std::fs::write(&out, text + "\n").map_err(io(&out))?;
    eprintln!("{out}: {} texts", texts.len());
    Ok(())
}

/// The corpus: a JSON array of strings.
fn read_corpus(path: &str) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let bad = |message: String| Error::Json {
        path: path.to_string(),
        message,
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let Value::Array(items) = value else {
        return Err(bad("expected a JSON array of strings".into()));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s),
            _ => Err(bad(format!("item {i} is not a string"))),
        })
        .collect()
}

/// The last path component, for the record.
pub fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}
