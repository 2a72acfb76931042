//! What the grammar mask costs per token on a 32 000-token vocabulary, measured (ignored by
//! default: it trains a BPE on first run and only means something in a release build):
//!
//! ```sh
//! cargo test --release -p sieve-plugin-grammar --test mask_cost -- --ignored --nocapture
//! ```
//!
//! For a JSON schema and a regex, a valid document is tokenized with the trained BPE and fed
//! step by step (200 steps). Each step times, separately:
//! - **mask**: llguidance alone (`Matcher::compute_mask`), the token mask;
//! - **apply**: the whole `grammar` stage on dense candidates over the full vocabulary: the
//!   mask, the check of the history, and keeping the allowed candidates;
//! - **accept**: advancing the parser with the document's next token.
//!
//! The first pass over the document is a fresh stage ("cold": llguidance builds its lexer
//! states as it meets them); four more passes after `reset` give the "warm" figures (per step,
//! the fastest of the four). Reported: median, 90th percentile and maximum over the steps, µs.

mod bpe;

use std::time::Instant;

use llguidance::Matcher;
use sieve_core::{Candidates, Context, Sampler, Vocab};
use sieve_grammar::source::Source;
use sieve_grammar::{env, Grammar};

/// Steps measured per document.
const STEPS: usize = 200;
/// Passes after the first (warm).
const WARM_PASSES: usize = 4;

/// The JSON schema: a list of user records, with a pattern, an enum, bounds.
const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "users": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "integer", "minimum": 1},
          "name": {"type": "string", "maxLength": 40},
          "joined": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
          "active": {"type": "boolean"},
          "roles": {"type": "array", "items": {"enum": ["admin", "editor", "viewer"]}},
          "score": {"type": "number"}
        },
        "required": ["id", "name", "joined", "active", "roles", "score"],
        "additionalProperties": false
      }
    }
  },
  "required": ["users"],
  "additionalProperties": false
}"#;

/// A document valid under [`SCHEMA`], indented like `json.dumps(indent=2)`, properties in
/// schema order.
fn json_document() -> String {
    let names = [
        "Ada Lovelace",
        "Alan Turing",
        "Grace Hopper",
        "Edsger Dijkstra",
        "Barbara Liskov",
        "Donald Knuth",
        "Frances Allen",
        "John Backus",
        "Margaret Hamilton",
        "Ken Thompson",
    ];
    let roles = ["admin", "editor", "viewer"];
    let users: Vec<String> = (0..24)
        .map(|i| {
            let role_list: Vec<String> = (0..=(i % 3))
                .map(|r| format!("\"{}\"", roles[(i + r) % 3]))
                .collect();
            format!(
                "    {{\n      \"id\": {},\n      \"name\": \"{}\",\n      \"joined\": \"20{:02}-{:02}-{:02}\",\n      \"active\": {},\n      \"roles\": [{}],\n      \"score\": {}.{}\n    }}",
                1000 + 37 * i,
                names[i % names.len()],
                10 + i % 14,
                1 + i % 12,
                1 + (i * 7) % 28,
                i % 2 == 0,
                role_list.join(", "),
                50 + (i * 13) % 50,
                (i * 7) % 10
            )
        })
        .collect();
    format!("{{\n  \"users\": [\n{}\n  ]\n}}", users.join(",\n"))
}

/// The regex: log lines with a timestamp, a level, a dotted logger name and a message.
const REGEX: &str = r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z (DEBUG|INFO|WARN|ERROR) [a-z_]+(\.[a-z_]+)*: [A-Za-z0-9 ,.'=_-]+\n)+";

/// A document the regex matches.
fn log_document() -> String {
    let levels = ["INFO", "DEBUG", "WARN", "ERROR"];
    let loggers = [
        "http.server",
        "asyncio",
        "importlib.util",
        "json.decoder",
        "email.parser",
    ];
    let messages = [
        "request handled in 12 ms, status=200",
        "connection closed by peer",
        "retrying after timeout, attempt 3",
        "cannot decode value at line 4, column 17",
        "loaded module from cache",
        "unexpected header 'content_type' ignored",
    ];
    (0..20)
        .map(|i| {
            format!(
                "2024-03-{:02}T{:02}:{:02}:{:02}Z {} {}: {}\n",
                1 + i % 28,
                (i * 5) % 24,
                (i * 11) % 60,
                (i * 17) % 60,
                levels[i % 4],
                loggers[i % 5],
                messages[i % 6]
            )
        })
        .collect()
}

/// Median, 90th percentile and maximum of `xs`.
fn summary(xs: &[f64]) -> (f64, f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), v[v.len() - 1])
}

fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// One pass of the stage over `ids`: µs per step for apply and accept.
fn pass_stage(g: &mut Grammar, ids: &[u32], logits: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let (mut apply, mut accept) = (Vec::new(), Vec::new());
    let mut c = Candidates::new();
    for i in 0..STEPS {
        c.load(logits);
        let cx = Context {
            history: &ids[..i],
            prompt_len: 0,
            vocab: None,
            step: i,
        };
        let t = Instant::now();
        g.apply(&mut c, &cx).expect("the document is valid");
        apply.push(micros(t));
        assert!(
            c.iter().any(|(id, _)| id == ids[i]),
            "step {i}: the document's token {} was masked",
            ids[i]
        );
        let t = Instant::now();
        g.accept(ids[i]);
        accept.push(micros(t));
    }
    (apply, accept)
}

/// One pass of llguidance's matcher over `ids`: µs per mask.
fn pass_matcher(m: &mut Matcher, ids: &[u32]) -> Vec<f64> {
    let mut out = Vec::new();
    for (i, &id) in ids.iter().take(STEPS).enumerate() {
        let t = Instant::now();
        let mask = m.compute_mask().expect("a mask");
        out.push(micros(t));
        assert!(mask.is_allowed(id), "step {i}: token {id} masked");
        m.consume_token(id).expect("a valid token");
    }
    out
}

/// Per step, the fastest of `passes`.
fn fastest(passes: &[Vec<f64>]) -> Vec<f64> {
    (0..passes[0].len())
        .map(|i| passes.iter().map(|p| p[i]).fold(f64::INFINITY, f64::min))
        .collect()
}

fn row(label: &str, xs: &[f64]) {
    let (m, p90, max) = summary(xs);
    println!("  {label:<14} median {m:>8.1}   p90 {p90:>8.1}   max {max:>9.1}");
}

fn measure(
    name: &str,
    source: &Source,
    text: &str,
    tokenizer: &tokenizers::Tokenizer,
    vocab: &Vocab,
) {
    let ids = tokenizer
        .encode(text, false)
        .expect("encode")
        .get_ids()
        .to_vec();
    assert!(ids.len() >= STEPS, "{name}: only {} tokens", ids.len());
    let logits: Vec<f32> = (0..vocab.len())
        .map(|i| ((i * 7919) % 1000) as f32 / 100.0)
        .collect();

    let t = Instant::now();
    let mut g = Grammar::new(source, "regex", vocab).expect("the grammar builds");
    let create_ms = micros(t) / 1e3;
    let (apply_cold, accept_cold) = pass_stage(&mut g, &ids, &logits);
    let mut warm_apply = Vec::new();
    let mut warm_accept = Vec::new();
    for _ in 0..WARM_PASSES {
        g.reset();
        let (a, b) = pass_stage(&mut g, &ids, &logits);
        warm_apply.push(a);
        warm_accept.push(b);
    }

    let tok_env = env::tok_env(vocab).unwrap();
    let factory = env::factory(&tok_env).unwrap();
    let fresh = || Matcher::new(factory.create_parser(source.to_grammar()));
    let mask_cold = pass_matcher(&mut fresh(), &ids);
    let initial = fresh();
    let warm_masks: Vec<Vec<f64>> = (0..WARM_PASSES)
        .map(|_| {
            let mut m = initial.clone();
            pass_matcher(&mut m, &ids)
        })
        .collect();

    println!(
        "{name}: {STEPS} steps of a {}-token document ({} bytes), stage built in {create_ms:.1} ms; µs per token:",
        ids.len(),
        text.len()
    );
    row("mask, cold", &mask_cold);
    row("mask, warm", &fastest(&warm_masks));
    row("apply, cold", &apply_cold);
    row("apply, warm", &fastest(&warm_apply));
    row("accept, cold", &accept_cold);
    row("accept, warm", &fastest(&warm_accept));
}

#[test]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
fn mask_cost_per_token_on_a_32k_vocabulary() {
    let t = Instant::now();
    let tokenizer = bpe::tokenizer();
    let words = bpe::token_bytes(&tokenizer);
    assert!(words.len() >= 32_000, "only {} tokens", words.len());
    let eos = words
        .iter()
        .position(|w| w == bpe::EOS_TEXT.as_bytes())
        .expect("the end-of-text token") as u32;
    let vocab = Vocab::new(words, vec![eos]);
    println!(
        "vocabulary: {} tokens (byte-level BPE, ready in {:.1} s)",
        vocab.len(),
        t.elapsed().as_secs_f64()
    );
    if cfg!(debug_assertions) {
        println!("(a debug build: run with --release for meaningful times)");
    }
    let schema = serde_json::from_str(SCHEMA).unwrap();
    measure(
        "JSON schema",
        &Source::JsonSchema(schema),
        &json_document(),
        &tokenizer,
        &vocab,
    );
    measure(
        "regex",
        &Source::Regex(REGEX.into()),
        &log_document(),
        &tokenizer,
        &vocab,
    );
}
