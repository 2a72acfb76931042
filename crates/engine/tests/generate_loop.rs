//! The generation loop driven by scripted logits: UTF-8 streaming, stop strings with hold-back,
//! EOS, token budget, context end, what stages see, model and detokenizer errors, and the
//! stats. No tensor library is compiled: the model is a script of logits, the tokenizer a
//! byte table.

mod common;

use std::sync::{Arc, Mutex};

use common::{greedy, greedy_pipeline};
use sieve_core::{Candidates, Context, Pipeline, Sampler};
use sieve_engine::{
    generate, Detokenize, Error, FinishReason, GenerateOptions, Generation, LanguageModel, Result,
};

/// A model that makes the greedy pipeline choose `script[i]` at step `i`.
struct Script {
    vocab: usize,
    context: usize,
    script: Vec<u32>,
    calls: Vec<Vec<u32>>,
    position: usize,
}

impl Script {
    fn new(vocab: usize, script: &[u32]) -> Self {
        Script {
            vocab,
            context: 1 << 20,
            script: script.to_vec(),
            calls: Vec::new(),
            position: 0,
        }
    }
}

impl LanguageModel for Script {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn context_len(&self) -> usize {
        self.context
    }
    fn position(&self) -> usize {
        self.position
    }
    fn reset(&mut self) {
        self.position = 0;
        self.calls.clear();
    }
    fn truncate(&mut self, len: usize) {
        self.position = self.position.min(len);
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        assert!(
            self.position + tokens.len() <= self.context,
            "fed past the context"
        );
        self.position += tokens.len();
        let step = self.calls.len();
        self.calls.push(tokens.to_vec());
        let mut logits = vec![0.0; self.vocab];
        logits[self.script[step] as usize] = 10.0;
        Ok(logits)
    }
}

/// Token `i` is the bytes `table[i]`; decoding is lossy UTF-8, like the HF tokenizers.
struct Bytes(Vec<Vec<u8>>);

impl Bytes {
    fn new(pieces: &[&[u8]]) -> Self {
        Bytes(pieces.iter().map(|p| p.to_vec()).collect())
    }
}

impl Detokenize for Bytes {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&i| self.0[i as usize].clone())
            .collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Runs the greedy loop on `script` after prompt `[0]`, collecting the streamed chunks.
fn run(
    table: &Bytes,
    script: &[u32],
    options: GenerateOptions<'_>,
) -> (Result<Generation>, Vec<String>) {
    let mut source = Script::new(table.0.len(), script);
    let mut chunks = Vec::new();
    let mut pipeline = greedy_pipeline();
    let out = generate(
        &mut source,
        table,
        &mut pipeline,
        &[0],
        &options,
        &mut |t| chunks.push(t.to_string()),
    );
    (out, chunks)
}

fn opts(max_tokens: usize, stop: &[&str], eos: &[u32]) -> GenerateOptions<'static> {
    GenerateOptions {
        max_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
        eos: eos.to_vec(),
        ..GenerateOptions::default()
    }
}

#[test]
fn a_character_split_across_tokens_is_streamed_whole() {
    // "€" is E2 82 AC; "🙂" is F0 9F 99 82.
    let table = Bytes::new(&[
        b"<s>",
        b"a",
        &[0xE2],
        &[0x82],
        &[0xAC],
        &[0xF0, 0x9F],
        &[0x99, 0x82],
        b"!",
    ]);
    let (out, chunks) = run(&table, &[1, 2, 3, 4, 5, 6, 7], opts(7, &[], &[]));
    let out = out.unwrap();
    assert_eq!(out.text, "a€🙂!");
    assert_eq!(chunks, ["a", "€", "🙂", "!"]);
    assert!(chunks.iter().all(|c| !c.contains('\u{FFFD}')));
    assert_eq!(out.finish, FinishReason::Length);
}

#[test]
fn an_unfinished_character_at_the_end_comes_out_as_a_replacement() {
    let table = Bytes::new(&[b"<s>", b"a", &[0xE2], &[0x82]]);
    let (out, chunks) = run(&table, &[1, 2, 3], opts(3, &[], &[]));
    assert_eq!(out.unwrap().text, "a\u{FFFD}");
    assert_eq!(chunks, ["a", "\u{FFFD}"]);
}

#[test]
fn a_stop_string_across_tokens_is_never_streamed() {
    let table = Bytes::new(&[b"<s>", b"abc", b"E", b"N", b"D", b"xyz"]);
    let (out, chunks) = run(&table, &[1, 2, 3, 4, 5], opts(10, &["END"], &[]));
    let out = out.unwrap();
    assert_eq!(out.finish, FinishReason::Stop);
    assert_eq!(out.text, "abc");
    assert_eq!(chunks, ["abc"]);
    // The token that completed the stop string is among the generated tokens.
    assert_eq!(out.tokens, [1, 2, 3, 4]);
}

#[test]
fn a_held_prefix_is_released_when_the_stop_string_does_not_follow() {
    let table = Bytes::new(&[b"<s>", b"abc", b"E", b"N", b"x"]);
    let (out, chunks) = run(&table, &[1, 2, 3, 4], opts(4, &["END"], &[]));
    let out = out.unwrap();
    assert_eq!(out.text, "abcENx");
    assert_eq!(chunks, ["abc", "ENx"]);
    // Held back at the end of the budget: emitted when generation ends.
    let (out, chunks) = run(&table, &[1, 2, 3], opts(3, &["END"], &[]));
    assert_eq!(
        (out.unwrap().text, chunks),
        (
            "abcEN".to_string(),
            vec!["abc".to_string(), "EN".to_string()]
        )
    );
}

#[test]
fn a_stop_string_inside_one_token_cuts_it() {
    let table = Bytes::new(&[b"<s>", b"one ", b"two<END>three", b"four"]);
    let (out, chunks) = run(&table, &[1, 2, 3], opts(10, &["<END>"], &[]));
    let out = out.unwrap();
    assert_eq!(
        (out.text.as_str(), out.finish),
        ("one two", FinishReason::Stop)
    );
    assert_eq!(chunks.concat(), "one two");
}

#[test]
fn the_stop_string_that_ends_first_wins() {
    let table = Bytes::new(&[b"<s>", b"xab", b"cd"]);
    let (out, _) = run(&table, &[1, 2], opts(10, &["abcd", "bc"], &[]));
    assert_eq!(out.unwrap().text, "xa");
}

#[test]
fn eos_ends_without_its_text() {
    let table = Bytes::new(&[b"<s>", b"hi", b"</s>", b"never"]);
    let (out, chunks) = run(&table, &[1, 2, 3], opts(10, &[], &[2]));
    let out = out.unwrap();
    assert_eq!(out.finish, FinishReason::Eos);
    assert_eq!(out.text, "hi");
    assert_eq!(chunks, ["hi"]);
    assert_eq!(out.tokens, [1, 2]);
    assert_eq!(out.stats.generated_tokens, 2);
}

#[test]
fn eos_releases_held_text() {
    let table = Bytes::new(&[b"<s>", b"a<", b"</s>"]);
    let (out, chunks) = run(&table, &[1, 2], opts(10, &["<|im_end|>"], &[2]));
    assert_eq!(out.unwrap().text, "a<");
    assert_eq!(chunks, ["a", "<"]);
}

#[test]
fn the_token_budget_ends_with_length() {
    let table = Bytes::new(&[b"<s>", b"a"]);
    let (out, _) = run(&table, &[1; 10], opts(4, &[], &[]));
    let out = out.unwrap();
    assert_eq!(
        (out.finish, out.tokens.len(), out.text.as_str()),
        (FinishReason::Length, 4, "aaaa")
    );
    let (out, chunks) = run(&table, &[1; 10], opts(0, &[], &[]));
    let out = out.unwrap();
    assert_eq!((out.finish, out.tokens.len()), (FinishReason::Length, 0));
    assert!(chunks.is_empty());
}

#[test]
fn the_context_end_ends_with_length_without_overfeeding() {
    let table = Bytes::new(&[b"<s>", b"a"]);
    let mut source = Script::new(2, &[1; 10]);
    source.context = 4;
    let mut pipeline = greedy_pipeline();
    let out = generate(
        &mut source,
        &table,
        &mut pipeline,
        &[0, 0],
        &opts(10, &[], &[]),
        &mut |_| {},
    )
    .unwrap();
    // Two prompt tokens + two generated fill the context of 4.
    assert_eq!((out.finish, out.tokens.len()), (FinishReason::Length, 2));
    assert_eq!(source.calls, vec![vec![0, 0], vec![1]]);
}

#[test]
fn the_source_gets_the_prompt_once_then_one_token_per_step() {
    let table = Bytes::new(&[b"<s>", b"a", b"b"]);
    let mut source = Script::new(3, &[1, 2, 1]);
    let mut pipeline = greedy_pipeline();
    let out = generate(
        &mut source,
        &table,
        &mut pipeline,
        &[0, 2, 1],
        &opts(3, &[], &[]),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.tokens, [1, 2, 1]);
    assert_eq!(source.calls, vec![vec![0, 2, 1], vec![1], vec![2]]);
}

/// What a stage saw: accepted tokens and, per step, (history, prompt_len, step).
#[derive(Default)]
struct Seen {
    accepted: Vec<u32>,
    steps: Vec<(Vec<u32>, usize, usize)>,
    resets: usize,
}

struct Recorder(Arc<Mutex<Seen>>);

impl Sampler for Recorder {
    fn apply(
        &mut self,
        _c: &mut Candidates,
        cx: &Context<'_>,
    ) -> std::result::Result<(), sieve_core::Error> {
        self.0
            .lock()
            .unwrap()
            .steps
            .push((cx.history.to_vec(), cx.prompt_len, cx.step));
        Ok(())
    }
    fn accept(&mut self, token: u32) {
        self.0.lock().unwrap().accepted.push(token);
    }
    fn reset(&mut self) {
        self.0.lock().unwrap().resets += 1;
    }
}

#[test]
fn stages_see_the_prompt_in_history_and_accept_it_when_asked() {
    let table = Bytes::new(&[b"<s>", b"a", b"b"]);
    for accept_prompt in [true, false] {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut pipeline = Pipeline::new(vec![
            ("recorder".to_string(), Box::new(Recorder(seen.clone()))),
            greedy(),
        ]);
        let mut source = Script::new(3, &[1, 2]);
        let options = GenerateOptions {
            accept_prompt,
            ..opts(2, &[], &[])
        };
        let out = generate(
            &mut source,
            &table,
            &mut pipeline,
            &[0, 2],
            &options,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(out.tokens, [1, 2]);
        let seen = seen.lock().unwrap();
        let expected_accepted: &[u32] = if accept_prompt {
            &[0, 2, 1, 2]
        } else {
            &[1, 2]
        };
        assert_eq!(seen.accepted, expected_accepted);
        assert_eq!(seen.resets, 1);
        assert_eq!(seen.steps, vec![(vec![0, 2], 2, 0), (vec![0, 2, 1], 2, 1)]);
    }
}

#[test]
fn invalid_requests_are_errors() {
    let table = Bytes::new(&[b"<s>", b"a"]);
    let mut pipeline = greedy_pipeline();
    let mut source = Script::new(2, &[1]);
    let e = generate(
        &mut source,
        &table,
        &mut pipeline,
        &[],
        &opts(3, &[], &[]),
        &mut |_| {},
    );
    assert!(matches!(e, Err(Error::EmptyPrompt)));
    let e = generate(
        &mut source,
        &table,
        &mut pipeline,
        &[0],
        &opts(3, &[""], &[]),
        &mut |_| {},
    );
    assert!(matches!(e, Err(Error::EmptyStop)));
    source.context = 2;
    let e = generate(
        &mut source,
        &table,
        &mut pipeline,
        &[0, 0, 0],
        &opts(3, &[], &[]),
        &mut |_| {},
    );
    assert!(matches!(
        e,
        Err(Error::ContextOverflow {
            tokens: 3,
            context: 2
        })
    ));
}

/// A model whose logits have the wrong length.
struct Short;

impl LanguageModel for Short {
    fn vocab_size(&self) -> usize {
        4
    }
    fn context_len(&self) -> usize {
        100
    }
    fn position(&self) -> usize {
        0
    }
    fn reset(&mut self) {}
    fn truncate(&mut self, _len: usize) {}
    fn forward(&mut self, _tokens: &[u32]) -> Result<Vec<f32>> {
        Ok(vec![0.0; 3])
    }
}

#[test]
fn logits_of_the_wrong_length_are_an_error() {
    let table = Bytes::new(&[b"<s>", b"a", b"b", b"c"]);
    let e = generate(
        &mut Short,
        &table,
        &mut greedy_pipeline(),
        &[0],
        &opts(3, &[], &[]),
        &mut |_| {},
    );
    assert!(matches!(
        e,
        Err(Error::LogitsLength {
            expected: 4,
            found: 3
        })
    ));
}

#[test]
fn stats_count_tokens_and_order_times() {
    let table = Bytes::new(&[b"<s>", b"a"]);
    let mut source = Script::new(2, &[1; 8]);
    let out = generate(
        &mut source,
        &table,
        &mut greedy_pipeline(),
        &[0, 0, 0],
        &opts(8, &[], &[]),
        &mut |_| {},
    )
    .unwrap();
    let s = out.stats;
    assert_eq!((s.prompt_tokens, s.generated_tokens), (3, 8));
    assert!(s.prefill_time <= s.time_to_first_token);
    assert!(s.time_to_first_token + s.decode_time <= s.total_time);
    assert!(s.decode_forward_time <= s.decode_time);
}

/// An error of some other crate, as a model or tokenizer would return.
#[derive(Debug)]
struct Broken(&'static str);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Broken {}

/// A model that fails on its second call (the first decode step).
struct FailsToDecode(Script);

impl LanguageModel for FailsToDecode {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn context_len(&self) -> usize {
        self.0.context_len()
    }
    fn position(&self) -> usize {
        self.0.position()
    }
    fn reset(&mut self) {
        self.0.reset();
    }
    fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        if self.0.calls.len() == 1 {
            return Err(Error::Model(Box::new(Broken("device lost"))));
        }
        self.0.forward(tokens)
    }
}

/// A detokenizer that cannot decode token 2.
struct NoTwo;

impl Detokenize for NoTwo {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        if ids.contains(&2) {
            return Err(Error::Detokenize(Box::new(Broken("no text for id 2"))));
        }
        Ok("x".repeat(ids.len()))
    }
}

#[test]
fn model_and_detokenizer_errors_come_back_with_their_own_message() {
    let table = Bytes::new(&[b"<s>", b"a"]);
    let mut model = FailsToDecode(Script::new(2, &[1; 4]));
    let e = generate(
        &mut model,
        &table,
        &mut greedy_pipeline(),
        &[0],
        &opts(4, &[], &[]),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, Error::Model(_)), "{e:?}");
    assert_eq!(e.to_string(), "device lost");

    let mut model = Script::new(3, &[1, 2]);
    let e = generate(
        &mut model,
        &NoTwo,
        &mut greedy_pipeline(),
        &[0],
        &opts(4, &[], &[]),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, Error::Detokenize(_)), "{e:?}");
    assert_eq!(e.to_string(), "no text for id 2");
}

#[test]
fn step_stats_measure_the_raw_distribution_and_what_the_pipeline_kept() {
    // Each step's logits: 10 for the scripted token, 0 for the two others, so under the raw
    // model p(scripted) = e^10 / (e^10 + 2) and H = ln Z − Σ p l with ln Z = ln(e^10 + 2).
    let table = Bytes::new(&[b"<s>", b"a", b"b"]);
    let options = GenerateOptions {
        step_stats: true,
        ..opts(2, &[], &[])
    };
    let (out, _) = run(&table, &[1, 2], options);
    let out = out.unwrap();
    assert_eq!(out.tokens, [1, 2]);
    let z = 10f64.exp() + 2.0;
    let p = 10f64.exp() / z;
    let entropy = z.ln() - p * 10.0;
    assert_eq!(out.steps.len(), 2);
    for step in &out.steps {
        assert!((step.logprob - p.ln()).abs() < 1e-9, "{step:?}");
        assert!((step.entropy - entropy).abs() < 1e-9, "{step:?}");
        // greedy selects without truncating: all three candidates stay.
        assert_eq!(step.survivors, 3);
    }
    // Off by default: nothing recorded.
    let (out, _) = run(&table, &[1, 2], opts(2, &[], &[]));
    assert!(out.unwrap().steps.is_empty());
}

/// A model whose every logit is NaN (a broken checkpoint).
struct NanModel;

impl LanguageModel for NanModel {
    fn vocab_size(&self) -> usize {
        4
    }
    fn context_len(&self) -> usize {
        64
    }
    fn position(&self) -> usize {
        0
    }
    fn reset(&mut self) {}
    fn truncate(&mut self, _len: usize) {}
    fn forward(&mut self, _tokens: &[u32]) -> Result<Vec<f32>> {
        Ok(vec![f32::NAN; 4])
    }
}

#[test]
fn nan_logits_are_the_models_fault() {
    let table = Bytes::new(&[b"a", b"b", b"c", b"d"]);
    let mut pipeline = greedy_pipeline();
    let e = generate(
        &mut NanModel,
        &table,
        &mut pipeline,
        &[0],
        &opts(3, &[], &[]),
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the model produced 4 NaN logits of 4 at generation step 0"
    );
}

#[test]
fn a_set_cancel_flag_stops_between_tokens_with_what_was_generated() {
    let table = Bytes::new(&[b"a", b"b", b"c", b"d"]);
    let mut pipeline = greedy_pipeline();
    let flag = std::sync::atomic::AtomicBool::new(false);
    let options = GenerateOptions {
        cancel: Some(&flag),
        ..opts(10, &[], &[])
    };
    let mut model = Script::new(4, &[1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2]);
    let mut seen = 0;
    let out = generate(
        &mut model,
        &table,
        &mut pipeline,
        &[0],
        &options,
        &mut |_| {
            seen += 1;
            if seen == 2 {
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        },
    )
    .unwrap();
    assert_eq!(out.finish, FinishReason::Cancelled);
    assert_eq!(out.tokens, [1, 2]);
    assert_eq!(out.text, "bc");
}

/// [`Bytes`] whose ids in `special` are special tokens.
struct WithSpecials {
    table: Bytes,
    special: Vec<u32>,
}

impl Detokenize for WithSpecials {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.table.decode(ids)
    }

    fn decode_skipping_special(&self, ids: &[u32]) -> Result<String> {
        let kept: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|id| !self.special.contains(id))
            .collect();
        self.table.decode(&kept)
    }
}

#[test]
fn special_tokens_are_left_out_of_the_text_unless_shown() {
    let detok = WithSpecials {
        table: Bytes::new(&[b"<s>", b"Hi", b"<|mark|>", b" there"]),
        special: vec![0, 2],
    };
    let script = [1, 2, 3];
    let generate_with = |show_special: bool, stop: &[&str]| {
        let mut source = Script::new(4, &script);
        let mut chunks = Vec::new();
        let options = GenerateOptions {
            show_special,
            ..opts(3, stop, &[])
        };
        let out = generate(
            &mut source,
            &detok,
            &mut greedy_pipeline(),
            &[0],
            &options,
            &mut |t| chunks.push(t.to_string()),
        )
        .unwrap();
        assert_eq!(chunks.concat(), out.text);
        out
    };
    let hidden = generate_with(false, &[]);
    assert_eq!(hidden.text, "Hi there");
    assert_eq!(hidden.tokens, vec![1, 2, 3]);
    assert_eq!(generate_with(true, &[]).text, "Hi<|mark|> there");
    // Stop strings match the text as written: a hidden marker cannot stop it.
    assert_eq!(
        generate_with(false, &["<|mark|>"]).finish,
        FinishReason::Length
    );
    let shown = generate_with(true, &["<|mark|>"]);
    assert_eq!(
        (shown.text.as_str(), shown.finish),
        ("Hi", FinishReason::Stop)
    );
}
