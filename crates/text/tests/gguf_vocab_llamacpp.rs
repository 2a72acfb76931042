//! The tokenizer from GGUF metadata against llama.cpp's own ids.
//!
//! `tests/fixtures/gguf/tokenizer_inputs/` holds tiny vocab-only GGUF files with their
//! metadata as JSON (`make_vocabs.py`), a corpus (`corpus.json`) and, per GGUF file, the ids
//! llama.cpp gives each text (`<name>.llamacpp.json`, made by `tools/llamacpp`'s `tokenize`):
//! `special` without BOS/EOS, `add_special` with them, special tokens parsed in both (the
//! way `sieve_text::Tokenizer::encode` reads text).
//!
//! A real file's metadata can be checked the same way by hand: dump it with
//! `dump_vocab.py FILE.gguf OUT.vocab.json`, make llama.cpp's ids for a corpus, then
//! `SIEVE_GGUF_VOCAB=OUT.vocab.json SIEVE_GGUF_EXPECTED=ids.json cargo test -p sieve-text
//! --test gguf_vocab_llamacpp -- --ignored`.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sieve_text::{gguf_tokenizer, GgufVocab};

fn inputs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf/tokenizer_inputs")
}

/// A `.vocab.json`: the fields of [`GgufVocab`].
#[derive(Deserialize)]
struct VocabJson {
    model: String,
    pre: Option<String>,
    tokens: Vec<String>,
    scores: Option<Vec<f32>>,
    token_types: Option<Vec<i32>>,
    merges: Option<Vec<String>>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    eot_id: Option<u32>,
    unk_id: Option<u32>,
    pad_id: Option<u32>,
    add_bos: Option<bool>,
    add_eos: Option<bool>,
    add_space_prefix: Option<bool>,
}

fn read_vocab(path: &Path) -> GgufVocab {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: VocabJson =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    GgufVocab {
        path: path.to_path_buf(),
        model: v.model,
        pre: v.pre,
        tokens: v.tokens,
        scores: v.scores,
        token_types: v.token_types,
        merges: v.merges,
        bos_id: v.bos_id,
        eos_id: v.eos_id,
        eot_id: v.eot_id,
        unk_id: v.unk_id,
        pad_id: v.pad_id,
        add_bos: v.add_bos,
        add_eos: v.add_eos,
        add_space_prefix: v.add_space_prefix,
        ..GgufVocab::default()
    }
}

/// The metadata of `<name>.gguf`: `bpe-<pre>` files share `bpe.vocab.json` and differ only in
/// `tokenizer.ggml.pre` (`bpe-default` has none).
fn vocab_of(name: &str) -> GgufVocab {
    match name.strip_prefix("bpe-") {
        Some(pre) => {
            let mut v = read_vocab(&inputs().join("bpe.vocab.json"));
            v.pre = (pre != "default").then(|| pre.to_string());
            v
        }
        None => read_vocab(&inputs().join(format!("{name}.vocab.json"))),
    }
}

/// One `.llamacpp.json`.
#[derive(Deserialize)]
struct Expected {
    /// llama.cpp's end-of-generation ids (`llama_vocab_is_eog`), where the file has them.
    eog: Option<Vec<u32>>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    special: Vec<u32>,
    add_special: Vec<u32>,
}

/// Every mismatch between sieve and llama.cpp for `vocab` on `expected`'s texts, and every
/// text that does not decode back to itself (byte-level BPE always does; a SentencePiece
/// text does when no special token sits in it, whose next piece gets a space prefixed).
fn mismatches(name: &str, vocab: &GgufVocab, expected: &Expected) -> Vec<String> {
    let tok = gguf_tokenizer(vocab).unwrap_or_else(|e| panic!("{name}: {e}"));
    let split_out = |id: &u32| {
        let t = vocab.token_types.as_ref().map_or(1, |t| t[*id as usize]);
        matches!(t, 2..=4)
    };
    let mut out = Vec::new();
    if let Some(eog) = &expected.eog {
        let ours = vocab.end_of_generation_ids();
        if &ours != eog {
            out.push(format!(
                "{name}: end-of-generation ids\n  sieve     {ours:?}\n  llama.cpp {eog:?}"
            ));
        }
    }
    for case in &expected.cases {
        if vocab.model == "gpt2" || !case.special.iter().any(split_out) {
            let text = tok.decode(&case.special).unwrap();
            if text != case.text {
                out.push(format!("{name}: {:?} decodes to {text:?}", case.text));
            }
        }
        for (add_special, want) in [(false, &case.special), (true, &case.add_special)] {
            let got = tok.encode(&case.text, add_special).unwrap();
            if &got != want {
                out.push(format!(
                    "{name}: {:?} (add_special {add_special}):\n  sieve     {got:?}\n  llama.cpp {want:?}",
                    case.text
                ));
            }
        }
    }
    out
}

fn read_expected(path: &Path) -> Expected {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_fixture_vocabulary_gives_llama_cpp_ids() {
    let mut names: Vec<String> = fs::read_dir(inputs())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".gguf").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 10, "fixtures missing: {names:?}");
    let mut all = Vec::new();
    for name in &names {
        let path = inputs().join(format!("{name}.llamacpp.json"));
        assert!(
            path.is_file(),
            "{}: llama.cpp's ids are missing",
            path.display()
        );
        let expected = read_expected(&path);
        assert!(
            expected.cases.len() >= 30,
            "{name}: {} cases",
            expected.cases.len()
        );
        all.extend(mismatches(name, &vocab_of(name), &expected));
    }
    assert!(
        all.is_empty(),
        "{} mismatches:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// A real file's metadata against llama.cpp's ids for it (see the module docs).
#[test]
#[ignore = "needs SIEVE_GGUF_VOCAB and SIEVE_GGUF_EXPECTED (a real file's dump and ids)"]
fn a_dumped_vocabulary_gives_llama_cpp_ids() {
    let vocab = std::env::var("SIEVE_GGUF_VOCAB").expect("SIEVE_GGUF_VOCAB");
    let expected = std::env::var("SIEVE_GGUF_EXPECTED").expect("SIEVE_GGUF_EXPECTED");
    let expected = read_expected(Path::new(&expected));
    let all = mismatches(&vocab, &read_vocab(Path::new(&vocab)), &expected);
    assert!(
        all.is_empty(),
        "{} mismatches:\n{}",
        all.len(),
        all.join("\n")
    );
}
