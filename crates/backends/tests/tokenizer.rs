//! The fixture tokenizers (byte-level BPE and SentencePiece-style with byte fallback): encoding,
//! decoding and per-token bytes.

mod common;

use sieve_backends::ModelDir;

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
        assert_eq!(Some(ids[0]), dir.config().bos_token_id, "{name}");
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
    let size = dir.config().vocab_size;
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
