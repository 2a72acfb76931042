//! A Hugging Face directory written as a quantized GGUF file (`quantize_hf`, `sieve quantize
//! HF_DIR OUT.gguf --type T`) runs alone: loaded back, its tokenizer (built from the
//! `tokenizer.ggml.*` metadata written) gives the ids of the directory's `tokenizer.json`, its
//! chat template renders the same text, BOS and the end-of-sequence ids survive, and its
//! logits are those of `--quantize T` on the directory, bit for bit. The tokenizer metadata
//! equals what llama.cpp's `convert_hf_to_gguf.py` wrote for the same tokenizer.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{fixture, fixture_dir};
use sieve_backends::gguf::export::quantize_hf;
use sieve_backends::{BackendKind, Message, ModelDir, WeightDtype};
use sieve_gguf::{GgufFile, Value};
use sieve_kernels::quant::QuantType;
use sieve_text::{vocab_from_hf, ModelIds};

/// The fixtures GGUF can express (gemma2-softcap's attention scale and the sliding windows of
/// mistral-window-sharded and qwen3-headdim cannot be), and the embedded models.
fn dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "llama-gqa-tied",
        "llama-f32-linear",
        "qwen2-bias",
        "gemma3-window",
    ]
    .iter()
    .map(|n| fixture_dir(n))
    .collect();
    let embedded = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/embedded");
    out.push(embedded.join("target"));
    out.push(embedded.join("draft"));
    out
}

fn corpus(specials: &[String]) -> Vec<String> {
    let mut texts: Vec<String> = [
        "Hello world",
        " Hello  world ",
        "I've been told he's there, 'RE you sure? We'Ve a'lL",
        "3 33 333 3333 33333 3.14159 1,000,000",
        "fn main() {\n    let x = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
        "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n",
        "Ça va? Straße, naïve café. Привет, мир! 你好，世界。こんにちは 안녕하세요 مرحبا नमस्ते",
        "🚀 (normal) 😶‍🌫️ ✅ 🦙🦙 ------======= ''''''```````",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in specials {
        texts.push(format!("{s}Hello{s} world {s}\n{s}"));
    }
    texts
}

fn written(tmp: &Path, dir: &Path, ty: QuantType) -> PathBuf {
    let name = dir.file_name().unwrap().to_string_lossy();
    let out = tmp.join(format!("{name}.{ty}.gguf"));
    let notes = quantize_hf(&ModelDir::open(dir).unwrap(), &out, ty)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(notes.is_empty(), "{name}: {notes:?}");
    out
}

#[test]
fn the_written_file_tokenizes_renders_and_stops_as_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in dirs() {
        let what = dir.display().to_string();
        let hf = ModelDir::open(&dir).unwrap();
        let gguf = ModelDir::open(written(tmp.path(), &dir, QuantType::Q8_0)).unwrap();
        let (a, b) = (hf.tokenizer().unwrap(), gguf.tokenizer().unwrap());
        let specials: Vec<String> = ["<s>", "</s>", "<|endoftext|>", "<|im_start|>", "<unk>"]
            .iter()
            .filter(|s| a.token_to_id(s).is_some())
            .map(|s| s.to_string())
            .collect();
        for text in corpus(&specials) {
            for add in [false, true] {
                assert_eq!(
                    a.encode(&text, add).unwrap(),
                    b.encode(&text, add).unwrap(),
                    "{what}: {text:?} add {add}"
                );
            }
        }
        assert_eq!(hf.bos_id(), gguf.bos_id(), "{what}");
        for eos in hf.eos_ids() {
            assert!(
                gguf.eos_ids().contains(&eos),
                "{what}: {eos} {:?}",
                gguf.eos_ids()
            );
        }
        assert_eq!(hf.vocab_size(), gguf.vocab_size(), "{what}");
        if let Ok(template) = hf.chat_template() {
            let messages = [
                Message::new("user", "Hi there"),
                Message::new("assistant", "Hello!"),
            ];
            let ours = gguf.chat_template().unwrap();
            assert_eq!(
                template.render(&messages, true).unwrap(),
                ours.render(&messages, true).unwrap(),
                "{what}"
            );
        } else {
            assert!(gguf.chat_template().is_err(), "{what}");
        }
    }
}

fn logits(path: &Path, dtype: WeightDtype, tokens: &[u32]) -> Vec<Vec<f32>> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(tokens).unwrap()
}

#[test]
fn the_written_file_gives_the_logits_of_quantizing_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, ty) in [
        ("llama-gqa-tied", QuantType::Q4K),
        ("qwen2-bias", QuantType::Q8_0),
        ("gemma3-window", QuantType::Q5_0),
    ] {
        let f = fixture(name);
        let file = written(tmp.path(), &f.dir, ty);
        let at_load = logits(&f.dir, WeightDtype::Quant(ty), &f.expected.tokens);
        let from_file = logits(&file, WeightDtype::Auto, &f.expected.tokens);
        assert_eq!(at_load.len(), from_file.len());
        for (row, (x, y)) in at_load.iter().zip(&from_file).enumerate() {
            let same =
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{name} {ty}: row {row} differs");
        }
    }
}

/// `tests/data/llamacpp-hf-llama/`: the tokenizer files of the tiny Hugging Face model that
/// llama.cpp's `convert_hf_to_gguf.py` made `tests/fixtures/gguf/llama/llama-F16.gguf` of
/// (`tools/make_gguf_fixtures.py tiny`).
#[test]
fn the_tokenizer_metadata_is_what_llama_cpp_s_converter_wrote() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/llamacpp-hf-llama");
    let theirs = GgufFile::open(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/gguf/llama/llama-F16.gguf"),
    )
    .unwrap();
    let config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(data.join("config.json")).unwrap()).unwrap();
    let ids = ModelIds {
        vocab_size: config["vocab_size"].as_u64().unwrap() as usize,
        bos: Some(317),
        eos: vec![317],
    };
    let ours = vocab_from_hf(&data, &ids).unwrap();
    assert!(ours.notes.is_empty());
    let mut w = sieve_gguf::Writer::new();
    sieve_backends::gguf::export::write_vocab(&mut w, &ours.vocab);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("vocab.gguf");
    w.write_file(&path).unwrap();
    let ours = GgufFile::open(&path).unwrap();
    let mut compared = 0;
    for (key, value) in theirs.metadata().entries() {
        if key.starts_with("tokenizer.") {
            assert_eq!(ours.metadata().get(key), Some(value), "{key}");
            compared += 1;
        }
    }
    assert!(compared >= 8, "{compared}");
    // The keys llama.cpp left out are written with llama.cpp's defaults.
    for (key, value) in ours.metadata().entries() {
        if theirs.metadata().get(key).is_none() {
            assert_eq!(
                (key.as_str(), value),
                ("tokenizer.ggml.add_eos_token", &Value::Bool(false))
            );
        }
    }
}
