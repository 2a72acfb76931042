//! The fixture tokenizers (byte-level BPE and SentencePiece-style with byte fallback): encoding,
//! decoding, per-token bytes, reading them without the weights, and streaming their text
//! through the engine's loop.

mod common;

use common::greedy_pipeline;
use sieve_backends::ModelDir;
use sieve_engine::{generate, GenerateOptions, LanguageModel};

const TEXT: &str = "Grüße: 10 € für 🙂 and 日本語\n  def main():";

fn tokenizer(name: &str) -> (ModelDir, sieve_backends::Tokenizer) {
    let dir = ModelDir::open(common::fixture_dir(name)).unwrap();
    let tok = dir.tokenizer().unwrap();
    (dir, tok)
}

#[test]
fn encoding_adds_bos_and_decoding_round_trips() {
    for name in ["llama-gqa-tied", "mistral-window-sharded"] {
        let (dir, tok) = tokenizer(name);
        let ids = tok.encode(TEXT, true).unwrap();
        assert_eq!(Some(ids[0]), dir.bos_id(), "{name}");
        let plain = tok.encode(TEXT, false).unwrap();
        assert_eq!(&ids[1..], &plain[..], "{name}");
        assert_eq!(tok.decode(&plain).unwrap(), TEXT, "{name}");
    }
}

#[test]
fn token_bytes_concatenate_to_the_text() {
    // Byte-level: the bytes of the tokens are the text's bytes.
    let (_, tok) = tokenizer("llama-gqa-tied");
    let ids = tok.encode(TEXT, false).unwrap();
    let bytes: Vec<u8> = ids
        .iter()
        .flat_map(|&i| tok.token_bytes(i).unwrap())
        .collect();
    assert_eq!(bytes, TEXT.as_bytes());
    // SentencePiece: the same, with the space the normalizer prepends (which decoding strips).
    let (_, tok) = tokenizer("mistral-window-sharded");
    let ids = tok.encode(TEXT, false).unwrap();
    assert!(
        ids.iter()
            .any(|&i| tok.token_bytes(i).unwrap().len() == 1
                && tok.token_bytes(i).unwrap()[0] >= 0x80),
        "no byte-fallback token was used"
    );
    let bytes: Vec<u8> = ids
        .iter()
        .flat_map(|&i| tok.token_bytes(i).unwrap())
        .collect();
    assert_eq!(bytes, format!(" {TEXT}").as_bytes());
}

#[test]
fn the_vocab_covers_the_model_and_names_eos() {
    let (dir, tok) = tokenizer("qwen2-bias");
    let size = dir.vocab_size();
    assert!(size > tok.vocab_size());
    let vocab = tok.vocab(size, dir.eos_ids());
    assert_eq!(vocab.len(), size);
    assert_eq!(vocab.eos(), dir.eos_ids().as_slice());
    // Special tokens are their content; ids past the tokenizer have no bytes.
    let eos = dir.eos_ids()[0];
    assert_eq!(vocab.token_bytes(eos), Some(b"<|endoftext|>".as_slice()));
    assert_eq!(vocab.token_bytes(size as u32 - 1), Some(b"".as_slice()));
    assert_eq!(tok.token_to_id("<|endoftext|>"), Some(eos));
}

#[test]
fn the_directory_and_the_vocabulary_are_read_without_the_weights() {
    let tmp = tempfile::tempdir().unwrap();
    for file in ["config.json", "generation_config.json", "tokenizer.json"] {
        std::fs::copy(
            common::fixture_dir("llama-gqa-tied").join(file),
            tmp.path().join(file),
        )
        .unwrap();
    }
    let dir = ModelDir::open(tmp.path()).unwrap();
    let tok = dir.tokenizer().unwrap();
    let vocab = dir.vocab(&tok);
    assert_eq!(vocab.len(), dir.vocab_size());
    assert_eq!(vocab.eos(), dir.eos_ids().as_slice());
    // Only the weights are missing.
    assert!(matches!(
        dir.checkpoint().unwrap_err(),
        sieve_backends::Error::Text(sieve_text::Error::MissingFile { .. })
    ));
}

/// A model that makes the greedy pipeline choose `script[i]` at step `i`.
struct Script {
    vocab: usize,
    script: Vec<u32>,
    step: usize,
    position: usize,
}

impl LanguageModel for Script {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn context_len(&self) -> usize {
        1 << 20
    }
    fn position(&self) -> usize {
        self.position
    }
    fn reset(&mut self) {
        self.step = 0;
        self.position = 0;
    }
    fn truncate(&mut self, len: usize) {
        self.position = self.position.min(len);
    }
    fn forward(&mut self, tokens: &[u32]) -> sieve_engine::Result<Vec<f32>> {
        self.position += tokens.len();
        let mut logits = vec![0.0; self.vocab];
        logits[self.script[self.step] as usize] = 10.0;
        self.step += 1;
        Ok(logits)
    }
}

/// Streams `text`'s tokens through the loop after a prompt and checks that the emitted text is
/// exactly what the tokenizer decodes for the whole sequence, minus the prompt's text.
fn stream_with_real_tokenizer(fixture: &str, prompt: &str, text: &str) {
    let (dir, tok) = tokenizer(fixture);
    let prompt_ids = tok.encode(prompt, true).unwrap();
    let gen_ids = tok.encode(text, false).unwrap();
    assert!(gen_ids.len() > 3, "{fixture}: {gen_ids:?}");
    // Some character must span several tokens for the test to mean anything.
    assert!(
        gen_ids
            .iter()
            .any(|&t| tok.decode(&[t]).unwrap().contains('\u{FFFD}')),
        "{fixture}"
    );
    let mut model = Script {
        vocab: dir.vocab_size(),
        script: gen_ids.clone(),
        step: 0,
        position: 0,
    };
    let mut chunks = Vec::new();
    let options = GenerateOptions {
        max_tokens: gen_ids.len(),
        ..GenerateOptions::default()
    };
    let out = generate(
        &mut model,
        &tok,
        &mut greedy_pipeline(),
        &prompt_ids,
        &options,
        &mut |t| chunks.push(t.to_string()),
    )
    .unwrap();
    let all: Vec<u32> = prompt_ids.iter().chain(&gen_ids).copied().collect();
    let whole = tok.decode(&all).unwrap();
    let head = tok.decode(&prompt_ids).unwrap();
    assert_eq!(format!("{head}{}", out.text), whole, "{fixture}");
    assert!(
        chunks.iter().all(|c| !c.contains('\u{FFFD}')),
        "{fixture}: {chunks:?}"
    );
}

#[test]
fn streaming_with_fixture_tokenizers_reproduces_their_decoding() {
    // Byte-level BPE and SentencePiece-style (leading `▁`, byte fallback for rare characters).
    for fixture in ["llama-gqa-tied", "mistral-window-sharded"] {
        stream_with_real_tokenizer(fixture, "The quick", " brown fox 🙂 jumps: 日本語 ½ €");
    }
}
