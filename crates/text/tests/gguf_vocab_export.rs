//! `tokenizer.json` written as GGUF tokenizer metadata ([`vocab_from_hf`]) and built back by
//! the GGUF reader ([`gguf_tokenizer`], llama.cpp's tokenizer) gives the ids the Hugging Face
//! tokenizer gives, on a corpus of multilingual text, code, digits, whitespace runs and
//! special tokens, with and without BOS/EOS; and what GGUF cannot state is an error naming it.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sieve_text::{gguf_tokenizer, vocab_from_hf, Error, GgufVocab, ModelIds, Tokenizer};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Hugging Face directories with a tokenizer: the test fixtures and the embedded models.
fn dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(root().join("tests/fixtures/models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out.push(root().join("models/embedded/target"));
    out.push(root().join("models/embedded/draft"));
    out
}

/// `config.json`'s vocabulary size and the BOS/EOS ids of `generation_config.json`.
fn model_ids(dir: &Path) -> ModelIds {
    let read = |name: &str| -> Value {
        serde_json::from_str(&fs::read_to_string(dir.join(name)).unwrap_or("{}".into())).unwrap()
    };
    let (config, generation) = (read("config.json"), read("generation_config.json"));
    let field = |f: &str| generation.get(f).or(config.get(f)).cloned();
    let eos = match field("eos_token_id") {
        Some(Value::Array(ids)) => ids.iter().map(|i| i.as_u64().unwrap() as u32).collect(),
        Some(Value::Number(n)) => vec![n.as_u64().unwrap() as u32],
        _ => Vec::new(),
    };
    ModelIds {
        vocab_size: config["vocab_size"].as_u64().unwrap() as usize,
        bos: field("bos_token_id")
            .and_then(|b| b.as_u64())
            .map(|b| b as u32),
        eos,
    }
}

/// Texts that exercise every step: scripts, emoji, code, digits, whitespace runs, special
/// tokens inside text, contractions, bytes no token covers.
fn corpus(specials: &[String]) -> Vec<String> {
    let mut texts: Vec<String> = [
        "Hello world",
        " Hello  world ",
        "The quick brown fox jumps over the lazy dog.",
        "I've been told he's there, 'RE you sure? We'Ve a'lL",
        "3 33 333 3333 33333 3.14159 1,000,000 0x1F",
        "fn main() {\n    let x = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
        "def f(a, b):\n    return a ** b  # comment\n\n\n",
        "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n",
        "Ça va? Très bien, merci. Straße, naïve café",
        "Привет, мир! нещо на Български",
        "你好，世界。我想在apple工作1314151天～",
        "こんにちは世界 カタカナ ひらがな",
        "안녕하세요 세계",
        "مرحبا بالعالم",
        "नमस्ते दुनिया",
        "🚀 (normal) 😶‍🌫️ ✅ 🦙🦙",
        "------======= ''''''```````\"\"\"\"......!!!!!!??????",
        "   leading and trailing   ",
        "",
        " ",
        "a",
        "\u{3000}ideographic\u{3000}space\u{a0}nbsp",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in specials {
        texts.push(s.clone());
        texts.push(format!("{s}Hello{s} world {s}\n{s}"));
        texts.push(format!("before {s} after"));
    }
    texts
}

/// The added tokens' texts of a `tokenizer.json`.
fn specials(dir: &Path) -> Vec<String> {
    let json: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("tokenizer.json")).unwrap()).unwrap();
    json["added_tokens"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["content"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every text where the two tokenizers disagree.
fn mismatches(hf: &Tokenizer, gguf: &Tokenizer, texts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for text in texts {
        for add in [false, true] {
            let (a, b) = (
                hf.encode(text, add).unwrap(),
                gguf.encode(text, add).unwrap(),
            );
            if a != b {
                out.push(format!("{text:?} (add {add}): hf {a:?} gguf {b:?}"));
            }
        }
    }
    out
}

#[test]
fn every_fixture_tokenizer_tokenizes_the_same_from_gguf_metadata() {
    let mut tried = 0;
    for dir in dirs() {
        let hf = Tokenizer::from_file(&dir.join("tokenizer.json")).unwrap();
        let exported = vocab_from_hf(&dir, &model_ids(&dir))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(
            exported.notes.is_empty(),
            "{}: {:?}",
            dir.display(),
            exported.notes
        );
        let gguf = gguf_tokenizer(&exported.vocab).unwrap();
        let bad = mismatches(&hf, &gguf, &corpus(&specials(&dir)));
        assert!(bad.is_empty(), "{}:\n{}", dir.display(), bad.join("\n"));
        tried += 1;
    }
    assert!(tried >= 9);
}

#[test]
fn the_kinds_of_model_and_the_special_ids_are_those_llama_cpp_expects() {
    let dir = root().join("tests/fixtures/models/llama-gqa-tied");
    let v = vocab_from_hf(&dir, &model_ids(&dir)).unwrap().vocab;
    assert_eq!(
        (v.model.as_str(), v.pre.as_deref()),
        ("gpt2", Some("gpt-2"))
    );
    assert_eq!(
        (v.bos_id, v.eos_id, v.add_bos, v.add_eos),
        (Some(1), Some(2), Some(true), Some(false))
    );
    let types = v.token_types.as_ref().unwrap();
    assert_eq!(&types[..4], &[3, 3, 3, 1]);
    assert!(v.scores.is_none() && v.merges.as_ref().is_some_and(|m| !m.is_empty()));
    // The generation config's second end-of-sequence id (0, `<|endoftext|>`) ends generation.
    assert_eq!(v.end_of_generation_ids(), vec![0, 2]);

    let dir = root().join("tests/fixtures/models/mistral-window-sharded");
    let v = vocab_from_hf(&dir, &model_ids(&dir)).unwrap().vocab;
    assert_eq!((v.model.as_str(), v.pre.as_deref()), ("llama", None));
    assert_eq!((v.unk_id, v.add_space_prefix), (Some(0), Some(true)));
    let types = v.token_types.as_ref().unwrap();
    assert_eq!(&types[..4], &[2, 3, 3, 6]);
    assert!(v.merges.is_none());
    // Scores rank the merges: the first merge's token scores highest.
    let scores = v.scores.as_ref().unwrap();
    let first = v.tokens.iter().position(|t| t == "\u{2581}t").unwrap();
    let best = scores.iter().cloned().fold(f32::MIN, f32::max);
    assert_eq!(scores[first], best);
}

/// A copy of the fixture `name` with its `tokenizer.json` changed by `edit`.
fn edited(name: &str, edit: impl FnOnce(&mut Value)) -> (tempfile::TempDir, GgufVocab, String) {
    let src = root().join("tests/fixtures/models").join(name);
    let tmp = tempfile::tempdir().unwrap();
    for f in ["tokenizer.json", "config.json", "generation_config.json"] {
        fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    let path = tmp.path().join("tokenizer.json");
    let mut json: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut json);
    fs::write(&path, serde_json::to_string(&json).unwrap()).unwrap();
    let ids = model_ids(tmp.path());
    match vocab_from_hf(tmp.path(), &ids) {
        Ok(v) => (tmp, v.vocab, String::new()),
        Err(e) => {
            assert!(matches!(e, Error::HfToGguf { .. }), "{e}");
            (tmp, GgufVocab::default(), e.to_string())
        }
    }
}

#[test]
fn what_gguf_cannot_state_is_an_error_naming_the_field() {
    for (name, edit, expect) in [
        (
            "qwen2-bias",
            Box::new(|j: &mut Value| j["normalizer"] = json!({"type": "Lowercase"}))
                as Box<dyn FnOnce(&mut Value)>,
            "normalizer",
        ),
        (
            "qwen2-bias",
            Box::new(|j: &mut Value| {
                j["pre_tokenizer"] = json!({"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": "\\w+|\\W"}, "behavior": "Isolated", "invert": false},
                    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})
            }),
            "pre_tokenizer",
        ),
        (
            "qwen2-bias",
            Box::new(|j: &mut Value| j["pre_tokenizer"] = json!({"type": "Whitespace"})),
            "pre_tokenizer",
        ),
        (
            "qwen2-bias",
            Box::new(|j: &mut Value| {
                j["post_processor"] =
                    json!({"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]})
            }),
            "post_processor",
        ),
        (
            "qwen2-bias",
            Box::new(|j: &mut Value| j["added_tokens"][1]["rstrip"] = json!(true)),
            "added_tokens[1]",
        ),
        (
            "mistral-window-sharded",
            Box::new(|j: &mut Value| {
                // Drop a merge: llama.cpp would still make its token.
                let merges = j["model"]["merges"].as_array_mut().unwrap();
                merges.remove(0);
            }),
            "model.merges",
        ),
        (
            "mistral-window-sharded",
            Box::new(|j: &mut Value| {
                j["normalizer"] = Value::Null;
                j["pre_tokenizer"] = json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false});
            }),
            "pre_tokenizer",
        ),
        (
            "llama-gqa-tied",
            Box::new(|j: &mut Value| j["model"]["vocab"]["extra"] = json!(400)),
            "model.vocab",
        ),
        (
            "llama-gqa-tied",
            Box::new(|j: &mut Value| j["model"]["type"] = json!("WordPiece")),
            "model.type",
        ),
    ] {
        let (_tmp, _, e) = edited(name, edit);
        assert!(
            e.contains(&format!(": {expect}: ")),
            "{name} {expect}: {e:?}"
        );
        assert!(e.contains("GGUF cannot state"), "{e}");
    }
}

#[test]
fn a_model_vocabulary_past_the_tokenizer_is_padded_with_unused_tokens() {
    let dir = root().join("tests/fixtures/models/qwen2-bias");
    let mut ids = model_ids(&dir);
    ids.vocab_size += 3;
    let v = vocab_from_hf(&dir, &ids).unwrap().vocab;
    let n = v.tokens.len();
    assert_eq!(n, ids.vocab_size);
    assert_eq!(v.tokens[n - 1], format!("[PAD{}]", n - 1));
    assert_eq!(v.token_types.as_ref().unwrap()[n - 1], 5);
    gguf_tokenizer(&v).unwrap();
}

/// A directory holding `tokenizer` as `tokenizer.json` and a `config.json` of its size.
fn dir_with(tokenizer: &Value) -> (tempfile::TempDir, ModelIds) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let n = tokenizer["model"]["vocab"].as_object().unwrap().len()
        + tokenizer["added_tokens"].as_array().map_or(0, Vec::len);
    let ids = ModelIds {
        vocab_size: n,
        bos: None,
        eos: Vec::new(),
    };
    (tmp, ids)
}

/// The ids of both tokenizers of `tokenizer` must agree on `texts`; returns the `pre` written.
fn agree(tokenizer: &Value, texts: &[&str]) -> Option<String> {
    let (tmp, ids) = dir_with(tokenizer);
    let hf = Tokenizer::from_file(&tmp.path().join("tokenizer.json")).unwrap();
    let v = vocab_from_hf(tmp.path(), &ids).unwrap().vocab;
    let gguf = gguf_tokenizer(&v).unwrap();
    let texts: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
    let bad = mismatches(&hf, &gguf, &texts);
    assert!(bad.is_empty(), "{:?}:\n{}", v.pre, bad.join("\n"));
    v.pre
}

#[test]
fn each_pre_tokenizer_splits_digits_and_contractions_as_its_preset() {
    // The embedded model's byte-level vocabulary, with merges for digit runs and `'s`, so that
    // GPT-2's split (` ?\p{N}+`), single digits and Llama 3's `\p{N}{1,3}` give different ids.
    let base: Value = serde_json::from_str(
        &fs::read_to_string(root().join("models/embedded/target/tokenizer.json")).unwrap(),
    )
    .unwrap();
    let mut t = base.clone();
    let vocab = t["model"]["vocab"].as_object_mut().unwrap();
    let mut next = vocab.len() as u64;
    let mut extra = Vec::new();
    for (l, r) in [
        ("3", "3"),
        ("33", "3"),
        ("333", "3"),
        ("Ġ", "3"),
        ("Ġ3", "33"),
        ("'", "s"),
        ("'", "S"),
    ] {
        let joined = format!("{l}{r}");
        if !vocab.contains_key(&joined) {
            vocab.insert(joined, json!(next));
            next += 1;
        }
        extra.push(json!([l, r]));
    }
    let merges = t["model"]["merges"].as_array_mut().unwrap();
    for (i, m) in extra.into_iter().enumerate() {
        merges.insert(i, m);
    }
    t["added_tokens"] = json!([]);
    t["post_processor"] = Value::Null;
    let texts = [
        "3 33 333 3333 33333 x3333y",
        "it's IT'S it'S",
        "a  3\n\n 33",
    ];
    let split = |regex: &str| {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})
    };
    let contractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
    for (pre, ignore_merges, expected) in [
        (json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}), false, "gpt-2"),
        (
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": true},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]}),
            false,
            "smollm",
        ),
        (
            split(&format!("{contractions}|[^\\r\\n\\p{{L}}\\p{{N}}]?\\p{{L}}+|\\p{{N}}{{1,3}}| ?[^\\s\\p{{L}}\\p{{N}}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")),
            true,
            "llama-bpe",
        ),
        (
            split(&format!("{contractions}|[^\\r\\n\\p{{L}}\\p{{N}}]?\\p{{L}}+|\\p{{N}}| ?[^\\s\\p{{L}}\\p{{N}}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")),
            false,
            "qwen2",
        ),
    ] {
        t["pre_tokenizer"] = pre;
        t["model"]["ignore_merges"] = json!(ignore_merges);
        assert_eq!(agree(&t, &texts).as_deref(), Some(expected));
    }
}

#[test]
fn sentencepiece_scores_follow_the_merge_order_not_the_ids() {
    // `ab` has a lower id than `bc`, but `b c` is merged first: "abc" is `a` `bc`.
    let mut vocab = serde_json::Map::new();
    for (i, t) in [
        "<unk>",
        "<s>",
        "</s>",
        "\u{2581}",
        "a",
        "b",
        "c",
        "ab",
        "bc",
        "\u{2581}a",
        "\u{2581}abc",
    ]
    .iter()
    .enumerate()
    {
        vocab.insert(t.to_string(), json!(i));
    }
    let mut t = json!({
        "added_tokens": [
            {"id": 0, "content": "<unk>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
            {"id": 1, "content": "<s>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
            {"id": 2, "content": "</s>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u{2581}"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"}]},
        "pre_tokenizer": null,
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": null,
        "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true,
            "vocab": vocab,
            "merges": [["b", "c"], ["\u{2581}", "a"], ["a", "b"], ["\u{2581}a", "bc"]]}
    });
    assert_eq!(agree(&t, &["abc", "b abc", "cab", "<s>abc</s>"]), None);
    // `▁abc` from `▁a` + `bc` only: `▁ab` is not a token, so no other split is reachable.
    t["model"]["merges"] = json!([
        ["b", "c"],
        ["a", "b"],
        ["\u{2581}", "a"],
        ["\u{2581}a", "bc"]
    ]);
    assert_eq!(agree(&t, &["abc", "xabc", "ab c"]), None);
    // An added `▁▁` no merge makes: llama.cpp would merge two spaces into it, BPE does not.
    t["model"]["vocab"]["\u{2581}\u{2581}"] = json!(11);
    let added = t["added_tokens"].as_array_mut().unwrap();
    added.push(
        json!({"id": 11, "content": "\u{2581}\u{2581}", "special": false, "normalized": false,
        "lstrip": false, "rstrip": false, "single_word": false}),
    );
    let (tmp, ids) = dir_with(&t);
    let e = vocab_from_hf(tmp.path(), &ids).unwrap_err().to_string();
    assert!(
        e.contains("model.merges") && e.contains("\u{2581}\u{2581}"),
        "{e}"
    );
    // With the merge it is stated, and both tokenize two spaces as it.
    t["model"]["merges"]
        .as_array_mut()
        .unwrap()
        .push(json!(["\u{2581}", "\u{2581}"]));
    assert_eq!(agree(&t, &["a  b", "  ", "\u{2581}\u{2581}x"]), None);
}
