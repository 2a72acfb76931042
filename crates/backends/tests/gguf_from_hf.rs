//! A Hugging Face directory written as a quantized GGUF file (`quantize_hf`, `sieve quantize
//! HF_DIR OUT.gguf --type T`) runs alone: loaded back, its tokenizer (built from the
//! `tokenizer.ggml.*` metadata written) gives the ids of the directory's `tokenizer.json`, its
//! chat template renders the same text, BOS and the end-of-sequence ids survive, and its
//! logits are those of `--quantize T` on the directory, bit for bit. The tokenizer metadata
//! equals what llama.cpp's `convert_hf_to_gguf.py` wrote for the same tokenizer, and the
//! whole Q8_0 file what its converter and `llama-quantize` wrote for the same directory.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{fixture, fixture_dir};
use sieve_backends::gguf::export::quantize_hf;
use sieve_backends::{BackendKind, Message, ModelDir, WeightDtype};
use sieve_gguf::{GgmlType, GgufFile, Value};
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

/// `tests/fixtures/gguf/models/NAME-Q8_0.gguf`: llama.cpp's own Q8_0 file of the fixture NAME
/// (`convert_hf_to_gguf.py` to F32, then `llama_model_quantize --pure`;
/// `tools/make_gguf_fixtures.py models`).
fn llama_cpp_s_file(name: &str) -> GgufFile {
    GgufFile::open(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/gguf/models")
            .join(format!("{name}-Q8_0.gguf")),
    )
    .unwrap()
}

/// Keys of llama.cpp's files that say nothing llama.cpp computes with: the converter's names
/// for the model (from the directory's name), and `add_sep_token`, which llama.cpp reads for
/// BERT-style and T5 vocabularies and rerankers only.
const NAMES_ONLY: [&str; 6] = [
    "general.name",
    "general.type",
    "general.size_label",
    "general.basename",
    "general.finetune",
    "tokenizer.ggml.add_sep_token",
];

/// `sieve quantize` writes, for every fixture GGUF can state, what llama.cpp's converter and
/// quantizer write: every key of llama.cpp's file (but [`NAMES_ONLY`]) with the same value;
/// the keys the converter leaves out hold llama.cpp's default for them or are read only by
/// what the converter misses; every tensor under the same name, type and dims with the same
/// bytes (q/k rows permuted, blocks rounded as llama-quantize rounds, the Llama 3 rope factors
/// to the bit) — but a matrix whose rows no block type fits, F16 in llama.cpp's file, F32 in
/// sieve's, holding the values llama.cpp's F16 rounds.
#[test]
fn the_file_is_what_llama_cpp_s_converter_and_quantizer_write() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "llama-gqa-tied",
        "llama-f32-linear",
        "qwen2-bias",
        "gemma3-window",
    ] {
        let theirs = llama_cpp_s_file(name);
        let ours =
            GgufFile::open(written(tmp.path(), &fixture_dir(name), QuantType::Q8_0)).unwrap();
        let (t, o) = (theirs.metadata(), ours.metadata());
        let mut compared = 0;
        for (key, value) in t.entries() {
            if !NAMES_ONLY.contains(&key.as_str()) {
                assert_eq!(o.get(key), Some(value), "{name}: {key}");
                compared += 1;
            }
        }
        assert!(compared >= 18, "{name}: {compared} keys");
        let Some(Value::String(arch)) = t.get("general.architecture") else {
            panic!("{name}: no architecture");
        };
        let number = |key: &str| match t.get(&format!("{arch}.{key}")) {
            Some(Value::U32(v)) => *v,
            other => panic!("{name}: {key} is {other:?}"),
        };
        let head_dim = number("embedding_length") / number("attention.head_count");
        for (key, value) in o.entries() {
            if t.get(key).is_some() {
                continue;
            }
            let key = key.as_str();
            let expected = match key.strip_prefix(&format!("{arch}.")) {
                // llama.cpp's default: the embedding width over the heads.
                Some(
                    "attention.key_length" | "attention.value_length" | "rope.dimension_count",
                ) => Value::U32(head_dim),
                // Read by llama.cpp for YaRN only; sieve's reader takes the Llama 3 scaling's
                // original context from it (this model's 64).
                Some("rope.scaling.original_context_length") => Value::U32(64),
                // The converter leaves Gemma 3's period out, and llama.cpp then takes every
                // sixth layer as global: this model's third is.
                Some("attention.sliding_window_pattern") => Value::U32(3),
                _ if key == "tokenizer.ggml.add_eos_token" => Value::Bool(false),
                _ => panic!("{name}: {key} = {value:?} is not in llama.cpp's file"),
            };
            assert_eq!(value, &expected, "{name}: {key}");
        }
        let names = |f: &GgufFile| {
            let mut n: Vec<String> = f.tensors().iter().map(|t| t.name.clone()).collect();
            n.sort();
            n
        };
        assert_eq!(names(&theirs), names(&ours), "{name}");
        for a in theirs.tensors() {
            let b = ours.tensor(&a.name).unwrap();
            let what = format!("{name}: {}", a.name);
            assert_eq!(a.dims, b.dims, "{what}");
            let (x, y) = (theirs.tensor_bytes(a), ours.tensor_bytes(b));
            if (a.ggml_type, b.ggml_type) == (GgmlType::F16, GgmlType::F32) {
                assert!(
                    a.dims[0] % 32 != 0,
                    "{what}: rows of {} fit Q8_0",
                    a.dims[0]
                );
                let rounded: Vec<u8> = y
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .flat_map(|v| half::f16::from_f32(v).to_le_bytes())
                    .collect();
                assert!(
                    rounded == x,
                    "{what}: the F32 values do not round to llama.cpp's F16"
                );
                continue;
            }
            assert_eq!(a.ggml_type, b.ggml_type, "{what}");
            assert!(x == y, "{what}: the bytes differ");
        }
    }
}
