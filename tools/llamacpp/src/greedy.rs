//! `greedy FILE.gguf PROMPT N`: llama.cpp's greedy continuation, as JSON on stdout.

use llama_cpp_2::model::LlamaChatMessage;
use llama_cpp_2::token::LlamaToken;
use serde_json::json;

use crate::args::Args;
use crate::engine::{argmax, decode, ContextSpec, Engine};
use crate::error::{llama, Error, Result};

/// Tokenizes PROMPT (BOS as the file says, special tokens parsed), then takes up to N argmax
/// steps, stopping after an end-of-generation token.
pub fn run(engine: &Engine, mut args: Args) -> Result<()> {
    let chat = args.flag("--chat");
    let mut spec = ContextSpec::from_args(&mut args, None, "f32")?;
    let file = args.positional("FILE.gguf")?;
    let prompt = args.positional("PROMPT")?;
    let n_arg = args.positional("N")?;
    args.finish()?;
    let n: usize = n_arg
        .parse()
        .map_err(|_| Error::Usage(format!("N: `{n_arg}` is not a count")))?;

    let model = engine.load(&file)?;
    let text = if chat {
        let template = model.chat_template(None).map_err(llama("chat template"))?;
        let message =
            LlamaChatMessage::new("user".into(), prompt.clone()).map_err(llama("message"))?;
        model
            .apply_chat_template(&template, &[message], true)
            .map_err(llama("applying the chat template"))?
    } else {
        prompt.clone()
    };
    let vocab = model.vocab();
    let prompt_ids = vocab.tokenize(text.as_bytes(), true, true);
    if prompt_ids.is_empty() {
        return Err(Error::Usage("the prompt gives no tokens".into()));
    }
    spec.n_ctx =
        u32::try_from(prompt_ids.len() + n + 1).map_err(|_| Error::Usage("N too large".into()))?;
    spec.n_batch = u32::try_from(prompt_ids.len()).unwrap_or(u32::MAX).max(16);
    let mut ctx = engine.context(&model, &spec)?;

    decode(&mut ctx, &prompt_ids, 0, false)?;
    let start = prompt_ids.len();
    let mut last = i32::try_from(prompt_ids.len() - 1).unwrap_or(0);
    let mut out: Vec<LlamaToken> = Vec::with_capacity(n);
    let mut bytes: Vec<u8> = Vec::new();
    for step in 0..n {
        let next = LlamaToken(i32::try_from(argmax(ctx.get_logits_ith(last))).unwrap_or(0));
        out.push(next);
        if vocab.is_eog(next) {
            break;
        }
        bytes.extend(vocab.token_to_piece(next, false, None));
        let pos = i32::try_from(start + step).map_err(|_| Error::Usage("N too large".into()))?;
        decode(&mut ctx, &[next], pos, false)?;
        last = 0;
    }
    let doc = json!({
        "prompt": text,
        "prompt_ids": prompt_ids.iter().map(|t| t.0).collect::<Vec<_>>(),
        "ids": out.iter().map(|t| t.0).collect::<Vec<_>>(),
        "text": String::from_utf8_lossy(&bytes),
        "stopped_at_eog": out.last().is_some_and(|&t| vocab.is_eog(t)),
    });
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    Ok(())
}
