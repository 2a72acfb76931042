//! The tokenizer from GGUF metadata on vocabularies made by hand, small enough that the
//! expected ids follow from llama.cpp's rules by reading them.

use std::path::PathBuf;

use sieve_text::{gguf_tokenizer, Error, GgufVocab, Tokenizer};

/// The 256 byte-level characters, in byte order (GPT-2's table).
fn byte_level_alphabet() -> Vec<String> {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let mut n = 0;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap().to_string()
            } else {
                n += 1;
                char::from_u32(0xFF + n).unwrap().to_string()
            }
        })
        .collect()
}

/// A byte-level vocabulary: the 256 bytes (ids 0..256), then the merge results in merge order,
/// then `<|endoftext|>` (control), `<|im_end|>` (control), `<tool>` (user-defined) and `abc`
/// (a token no merge makes).
fn bpe(pre: &str) -> GgufVocab {
    let merges = [
        "h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "1 2",
    ];
    let mut tokens = byte_level_alphabet();
    for m in merges {
        tokens.push(m.replace(' ', ""));
    }
    let n = tokens.len();
    tokens.extend(["<|endoftext|>", "<|im_end|>", "<tool>", "abc"].map(String::from));
    let mut types = vec![1; tokens.len()];
    types[n] = 3;
    types[n + 1] = 3;
    types[n + 2] = 4;
    GgufVocab {
        path: PathBuf::from("hand.gguf"),
        model: "gpt2".into(),
        pre: Some(pre.into()),
        tokens,
        token_types: Some(types),
        merges: Some(merges.iter().map(|m| m.to_string()).collect()),
        bos_id: Some(n as u32),
        eos_id: Some(n as u32 + 1),
        ..GgufVocab::default()
    }
}

fn id(meta: &GgufVocab, text: &str) -> u32 {
    meta.tokens.iter().position(|t| t == text).unwrap() as u32
}

fn ids(meta: &GgufVocab, texts: &[&str]) -> Vec<u32> {
    texts.iter().map(|t| id(meta, t)).collect()
}

fn build(meta: &GgufVocab) -> Tokenizer {
    gguf_tokenizer(meta).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn byte_level_bpe_merges_by_rank_and_splits_special_tokens_out() {
    let meta = bpe("gpt-2");
    let tok = build(&meta);
    assert_eq!(
        tok.encode("hello world", false).unwrap(),
        ids(&meta, &["hello", "Ġworld"])
    );
    // Special tokens are split out first; user-defined ones too.
    assert_eq!(
        tok.encode("hello<|im_end|> world<tool>", false).unwrap(),
        ids(&meta, &["hello", "<|im_end|>", "Ġworld", "<tool>"])
    );
    // gpt-2 adds no BOS by default.
    assert_eq!(tok.encode("hello", true).unwrap(), ids(&meta, &["hello"]));
    // Bytes without a merge stay bytes (é is two).
    assert_eq!(tok.encode("é", false).unwrap(), ids(&meta, &["Ã", "©"]));
    let text = "hello world<|im_end|> é 12";
    let encoded = tok.encode(text, false).unwrap();
    assert_eq!(tok.decode(&encoded).unwrap(), text);
    assert_eq!(tok.token_bytes(id(&meta, "Ġworld")).unwrap(), b" world");
}

#[test]
fn the_pre_tokenizer_name_picks_the_regexes() {
    // gpt-2 keeps runs of digits together, so `1 2` merges; smollm splits digits first.
    let gpt2 = bpe("gpt-2");
    assert_eq!(
        build(&gpt2).encode("123", false).unwrap(),
        ids(&gpt2, &["12", "3"])
    );
    let smollm = bpe("smollm");
    assert_eq!(
        build(&smollm).encode("123", false).unwrap(),
        ids(&smollm, &["1", "2", "3"])
    );
    // llama-bpe groups digits by three and takes a word that is a token whole
    // (`ignore_merges`), where gpt-2 can only reach it by merges.
    let llama3 = bpe("llama-bpe");
    assert_eq!(
        build(&llama3).encode("abc", false).unwrap(),
        ids(&llama3, &["abc"])
    );
    assert_eq!(
        build(&gpt2).encode("abc", false).unwrap(),
        ids(&gpt2, &["a", "b", "c"])
    );
    // llama-bpe adds BOS by default.
    assert_eq!(
        build(&llama3).encode("abc", true).unwrap(),
        ids(&llama3, &["<|endoftext|>", "abc"])
    );
    // add_bos_token from the file wins over the preset's default.
    let mut no_bos = bpe("llama-bpe");
    no_bos.add_bos = Some(false);
    assert_eq!(
        build(&no_bos).encode("abc", true).unwrap(),
        ids(&no_bos, &["abc"])
    );
}

/// A SentencePiece-style vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, then pieces
/// with the given scores.
fn spm(pieces: &[(&str, f32)]) -> GgufVocab {
    let mut tokens: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
    let mut types = vec![2, 3, 3];
    let mut scores = vec![0.0, 0.0, 0.0];
    for b in 0..256 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6);
        scores.push(0.0);
    }
    for (p, s) in pieces {
        tokens.push(p.to_string());
        types.push(1);
        scores.push(*s);
    }
    GgufVocab {
        path: PathBuf::from("spm.gguf"),
        model: "llama".into(),
        tokens,
        scores: Some(scores),
        token_types: Some(types),
        bos_id: Some(1),
        eos_id: Some(2),
        unk_id: Some(0),
        ..GgufVocab::default()
    }
}

const PIECES: &[(&str, f32)] = &[
    ("▁", -1.0),
    ("a", -2.0),
    ("b", -3.0),
    ("c", -4.0),
    ("ab", -10.0),
    ("bc", -5.0),
    ("▁a", -20.0),
];

#[test]
fn sentencepiece_merges_follow_the_scores_of_the_merged_tokens() {
    // `bc` scores higher than `ab`, so b+c merges first; `▁a` is then the best pair.
    let meta = spm(PIECES);
    let tok = build(&meta);
    assert_eq!(tok.encode("abc", false).unwrap(), ids(&meta, &["▁a", "bc"]));
    // With `ab` scored higher, a+b merges first and `bc` cannot form.
    let mut swapped = PIECES.to_vec();
    swapped[4].1 = -1.5;
    let meta2 = spm(&swapped);
    assert_eq!(
        build(&meta2).encode("abc", false).unwrap(),
        ids(&meta2, &["▁", "ab", "c"])
    );
}

#[test]
fn sentencepiece_prefixes_spaces_falls_back_to_bytes_and_adds_bos() {
    let meta = spm(PIECES);
    let tok = build(&meta);
    // BOS by default; every piece of text after a special token gets the space prefix.
    assert_eq!(
        tok.encode("a</s>a", true).unwrap(),
        ids(&meta, &["<s>", "▁a", "</s>", "▁a"])
    );
    // é is not a token: its UTF-8 bytes are.
    assert_eq!(
        tok.encode("é", false).unwrap(),
        ids(&meta, &["▁", "<0xC3>", "<0xA9>"])
    );
    // Decoding drops the prefixed space and joins the bytes.
    let encoded = tok.encode("a bc é", false).unwrap();
    assert_eq!(tok.decode(&encoded).unwrap(), "a bc é");
    assert_eq!(tok.token_bytes(id(&meta, "▁a")).unwrap(), b" a");
    assert_eq!(tok.token_bytes(id(&meta, "<0xC3>")).unwrap(), [0xC3]);

    // Without the space prefix, the text is taken as it is.
    let mut plain = spm(PIECES);
    plain.add_space_prefix = Some(false);
    plain.add_bos = Some(false);
    assert_eq!(
        build(&plain).encode("a bc", true).unwrap(),
        ids(&plain, &["a", "▁", "bc"])
    );
}

fn error_of(meta: &GgufVocab) -> String {
    let e = gguf_tokenizer(meta).unwrap_err();
    assert!(matches!(e, Error::GgufTokenizer { .. }), "{e:?}");
    assert!(e.is_bad_model_file());
    e.to_string()
}

#[test]
fn inconsistent_metadata_is_an_error_naming_the_key_and_index() {
    let mut m = spm(PIECES);
    m.scores.as_mut().unwrap().truncate(10);
    let e = error_of(&m);
    assert!(
        e.contains("tokenizer.ggml.scores") && e.contains("10 scores"),
        "{e}"
    );

    let mut m = spm(PIECES);
    m.token_types.as_mut().unwrap().pop();
    assert!(error_of(&m).contains("tokenizer.ggml.token_type"));

    let mut m = spm(PIECES);
    m.tokens[261] = "a".into();
    let e = error_of(&m);
    assert!(e.contains("duplicates"), "{e}");

    let mut m = bpe("gpt-2");
    m.merges.as_mut().unwrap().push("q zz".into());
    let e = error_of(&m);
    assert!(e.contains("merge 10") && e.contains("\"zz\""), "{e}");

    let mut m = bpe("gpt-2");
    m.merges.as_mut().unwrap().push("nospace".into());
    assert!(error_of(&m).contains("merge 10"));

    let mut m = bpe("gpt-2");
    m.merges = None;
    assert!(error_of(&m).contains("tokenizer.ggml.merges"));

    let mut m = bpe("gpt-2");
    m.eos_id = Some(100_000);
    let e = error_of(&m);
    assert!(e.contains("eos_token_id") && e.contains("100000"), "{e}");

    let mut m = spm(PIECES);
    m.tokens.clear();
    assert!(error_of(&m).contains("no tokens"));
}

#[test]
fn a_vocabulary_asking_for_huge_merge_tables_is_refused() {
    // `a`, `aa`, …, 256 `a`s: every split of every token is a merge, about 2.8 MB of merges
    // for 33 kB of tokens.
    let pieces: Vec<(String, f32)> = (1..=256).map(|n| ("a".repeat(n), -(n as f32))).collect();
    let pieces: Vec<(&str, f32)> = pieces.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let e = error_of(&spm(&pieces));
    assert!(
        e.contains("tokenizer.ggml.tokens") && e.contains("merges"),
        "{e}"
    );
    // The first 64 are fine.
    let mut fine = spm(&pieces[..64]);
    fine.add_space_prefix = Some(false);
    assert_eq!(
        build(&fine).encode("aaaa", false).unwrap(),
        ids(&fine, &["aaaa"])
    );
}

#[test]
fn unknown_or_unsupported_names_are_errors_naming_them() {
    let mut m = bpe("gpt-2");
    m.model = "bert".into();
    let e = error_of(&m);
    assert!(
        e.contains("\"bert\"") && e.contains("tokenizer.ggml.model"),
        "{e}"
    );

    let e = error_of(&bpe("no-such-pre"));
    assert!(e.contains("unknown pre-tokenizer \"no-such-pre\""), "{e}");

    let e = error_of(&bpe("kimi-k2"));
    assert!(e.contains("\"kimi-k2\" is not supported"), "{e}");

    // BOS to be added but no BOS id (chatglm-bpe has no default one; llama.cpp's default 11
    // would do for the others).
    let mut m = bpe("chatglm-bpe");
    m.bos_id = None;
    m.add_bos = Some(true);
    let e = error_of(&m);
    assert!(e.contains("add_bos_token"), "{e}");
}

#[test]
fn end_of_generation_ids_come_from_ids_and_token_texts() {
    let meta = bpe("gpt-2");
    // `<|endoftext|>` and `<|im_end|>` by text, `<|im_end|>` also as EOS.
    assert_eq!(
        meta.end_of_generation_ids(),
        ids(&meta, &["<|endoftext|>", "<|im_end|>"])
    );
    let mut m = spm(PIECES);
    m.eot_id = Some(260);
    assert_eq!(m.end_of_generation_ids(), vec![2, 260]);
}

#[test]
fn tokens_named_like_control_tokens_are_split_out_whatever_their_type() {
    // `<|im_end|>` typed normal is still a control token for llama.cpp.
    let mut meta = bpe("gpt-2");
    let im_end = id(&meta, "<|im_end|>") as usize;
    meta.token_types.as_mut().unwrap()[im_end] = 1;
    assert_eq!(
        build(&meta).encode("hello<|im_end|>", false).unwrap(),
        ids(&meta, &["hello", "<|im_end|>"])
    );
}
