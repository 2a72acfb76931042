//! `logits FILE.gguf IDS OUT`: llama.cpp's f32 logits at every position of an id sequence.

use std::io::Write;

use llama_cpp_2::token::LlamaToken;
use serde_json::Value;

use crate::args::Args;
use crate::engine::{check_ids, decode, ContextSpec, Engine};
use crate::error::{io, Error, Result};

/// Decodes the ids in one batch and writes `positions x vocab` little-endian f32 to OUT.
pub fn run(engine: &Engine, mut args: Args) -> Result<()> {
    let mut spec = ContextSpec::from_args(&mut args, None, "f32")?;
    let file = args.positional("FILE.gguf")?;
    let ids_arg = args.positional("IDS")?;
    let out = args.positional("OUT")?;
    args.finish()?;

    let ids = parse_ids(&ids_arg)?;
    if ids.is_empty() {
        return Err(Error::Usage("IDS is empty".into()));
    }
    let model = engine.load(&file)?;
    check_ids(&model, &ids)?;
    spec.n_ctx = u32::try_from(ids.len()).map_err(|_| Error::Usage("too many ids".into()))?;
    spec.n_batch = spec.n_ctx;
    let mut ctx = engine.context(&model, &spec)?;
    decode(&mut ctx, &ids, 0, true)?;

    let n_vocab = usize::try_from(model.n_vocab()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(ids.len() * n_vocab * 4);
    for i in 0..ids.len() {
        let row = ctx.get_logits_ith(i32::try_from(i).unwrap_or(i32::MAX));
        if row.len() != n_vocab {
            return Err(Error::Llama(format!(
                "position {i}: {} logits, expected {n_vocab}",
                row.len()
            )));
        }
        for v in row {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut f = std::fs::File::create(&out).map_err(io(&out))?;
    f.write_all(&bytes).map_err(io(&out))?;
    eprintln!("{out}: {} positions x {n_vocab} logits", ids.len());
    Ok(())
}

/// `1,2,3` or `@FILE.json` (a JSON array of ids).
pub fn parse_ids(arg: &str) -> Result<Vec<LlamaToken>> {
    if let Some(path) = arg.strip_prefix('@') {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let bad = |message: String| Error::Json {
            path: path.to_string(),
            message,
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let Value::Array(items) = value else {
            return Err(bad("expected a JSON array of token ids".into()));
        };
        return items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .map(LlamaToken)
                    .ok_or_else(|| bad(format!("item {i} is not a token id")))
            })
            .collect();
    }
    arg.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .map(LlamaToken)
                .map_err(|_| Error::Usage(format!("IDS: `{s}` is not a token id")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_a_list_or_a_json_file() {
        let ids: Vec<i32> = parse_ids("1, 2,3,").unwrap().iter().map(|t| t.0).collect();
        assert_eq!(ids, [1, 2, 3]);
        let path =
            std::env::temp_dir().join(format!("sieve-llamacpp-ids-{}.json", std::process::id()));
        std::fs::write(&path, "[7, 8]").unwrap();
        let arg = format!("@{}", path.display());
        let ids: Vec<i32> = parse_ids(&arg).unwrap().iter().map(|t| t.0).collect();
        std::fs::write(&path, "[7, \"x\"]").unwrap();
        let bad = parse_ids(&arg);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(ids, [7, 8]);
        assert!(matches!(bad, Err(Error::Json { message, .. }) if message.contains("item 1")));
        assert!(matches!(parse_ids("1,x"), Err(Error::Usage(m)) if m.contains('x')));
        assert!(matches!(parse_ids("99999999999"), Err(Error::Usage(_))));
    }
}
