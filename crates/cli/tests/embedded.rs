//! The embedded story models (`models/embedded`): the default model writes English, the draft
//! shares its tokenizer and predicts the target's greedy tokens often enough to be a useful
//! speculative-decoding draft.

mod common;

use common::ok_json;
use serde_json::Value;

/// Greedy continuation of `prompt` by the default model.
fn greedy(prompt: &str, n: &str) -> Value {
    ok_json(&[
        "generate",
        "--prompt",
        prompt,
        "-n",
        n,
        "--sampler",
        "greedy",
        "--json",
    ])
}

#[test]
fn the_default_model_continues_a_story_in_english() {
    let out = greedy("Once upon a time", "64");
    let text = out["text"].as_str().unwrap();
    assert_eq!(out["tokens"].as_array().unwrap().len(), 64, "{out}");
    assert_eq!(out["finish_reason"], "length", "{out}");
    // The stories' first sentence, then more sentences of the same world.
    assert!(text.starts_with(", there was a "), "{text:?}");
    assert!(
        text.contains(" named ") && text.matches(". ").count() >= 3,
        "{text:?}"
    );
    // Only letters, spaces and the stories' punctuation: no byte soup.
    assert!(
        text.chars()
            .all(|c| c.is_ascii_alphabetic() || " ,.!?\"'".contains(c)),
        "{text:?}"
    );
}

#[test]
fn the_draft_predicts_most_of_the_targets_greedy_tokens() {
    // Greedy speculative decoding accepts a drafted token exactly when the draft's argmax
    // equals the target's: measure that rate along the target's own greedy continuation.
    let prompt = "Once upon a time";
    let out = greedy(prompt, "48");
    let prompt_ids = ok_json(&[
        "logits", "--model", "embedded", "--prompt", prompt, "--json",
    ])["tokens"]
        .as_array()
        .unwrap()
        .clone();
    let generated = out["tokens"].as_array().unwrap();
    let ids: Vec<String> = prompt_ids
        .iter()
        .chain(generated)
        .map(|t| t.to_string())
        .collect();
    let ids = ids.join(",");
    let draft = ok_json(&[
        "logits",
        "--model",
        "embedded-draft",
        "--tokens",
        &ids,
        "--all-positions",
        "--json",
    ]);
    let rows = draft["logits"].as_array().unwrap();
    let first = prompt_ids.len() - 1;
    let mut accepted = 0;
    for (k, token) in generated.iter().enumerate() {
        let row: Vec<f64> = rows[first + k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let argmax = (0..row.len())
            .max_by(|&a, &b| row[a].total_cmp(&row[b]).then(b.cmp(&a)))
            .unwrap();
        accepted += usize::from(argmax as u64 == token.as_u64().unwrap());
    }
    let rate = accepted as f64 / generated.len() as f64;
    assert!(
        rate >= 0.5,
        "draft acceptance {rate:.2} ({accepted} of {})",
        generated.len()
    );
}

#[test]
fn a_stop_string_cuts_the_story_at_its_first_sentence() {
    let full = greedy("Once upon a time", "64");
    let text = full["text"].as_str().unwrap();
    let first = &text[..text.find('.').unwrap()];
    let stopped = ok_json(&[
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "64",
        "--sampler",
        "greedy",
        "--stop",
        ".",
        "--json",
    ]);
    assert_eq!(stopped["finish_reason"], "stop", "{stopped}");
    assert_eq!(stopped["text"], first, "{stopped}");
}
