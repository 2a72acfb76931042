//! Stop strings against a naive reference (the matcher sieve had before the Aho–Corasick
//! one: every stop string searched in the pending text, every prefix of every stop string
//! tried as its end), over random stop lists, random texts and random cuts of those texts
//! into tokens; and the limits of issue 22 item 5.

use proptest::prelude::*;
use sieve_engine::stop::{StopLimit, MAX_STOP_BYTES, MAX_STOP_STRINGS};
use sieve_engine::{
    Detokenize, Emitter, EndRules, Error, FinishReason, GenerateOptions, Result, StopMatch,
    StopStrings,
};

/// The stop string that ends first in `text` (ties: the one that starts first, then the
/// first given).
fn naive_find(stops: &[String], text: &str) -> Option<StopMatch> {
    stops
        .iter()
        .enumerate()
        .filter_map(|(index, s)| {
            text.find(s.as_str()).map(|start| StopMatch {
                start,
                end: start + s.len(),
                index,
            })
        })
        .min_by_key(|m| (m.end, m.start))
}

/// The longest suffix of `text` that is a proper prefix of a stop string.
fn naive_partial(stops: &[String], text: &str) -> usize {
    let mut best = 0;
    for s in stops {
        for k in 1..s.len().min(text.len() + 1) {
            if s.is_char_boundary(k) && text.ends_with(&s[..k]) {
                best = best.max(k);
            }
        }
    }
    best
}

/// What streaming `chunks` gives under the naive matcher: the pieces emitted (non-empty) and
/// whether a stop string ended it.
fn naive_stream(stops: &[String], chunks: &[String]) -> (Vec<String>, bool) {
    let mut pieces = Vec::new();
    let mut pending = String::new();
    for chunk in chunks {
        pending.push_str(chunk);
        if let Some(m) = naive_find(stops, &pending) {
            if m.start > 0 {
                pieces.push(pending[..m.start].to_string());
            }
            return (pieces, true);
        }
        let ready = pending.len() - naive_partial(stops, &pending);
        if ready > 0 {
            pieces.push(pending.drain(..ready).collect());
        }
    }
    if !pending.is_empty() {
        pieces.push(pending);
    }
    (pieces, false)
}

/// Token `i` is the text `chunks[i]`.
struct Chunks(Vec<String>);

impl Detokenize for Chunks {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(ids.iter().map(|&i| self.0[i as usize].as_str()).collect())
    }
}

/// What streaming `chunks` (one token each) through an [`Emitter`] gives: the pieces, and
/// whether it finished at a stop string.
fn engine_stream(stops: &[String], chunks: &[String]) -> (Vec<String>, bool) {
    let detok = Chunks(chunks.to_vec());
    let rules = EndRules {
        max_tokens: usize::MAX,
        context: usize::MAX,
        eos: Vec::new(),
        stops: StopStrings::new(stops).unwrap(),
        show_special: true,
    };
    let mut pieces = Vec::new();
    let mut on_text = |t: &str| pieces.push(t.to_string());
    let mut emitter = Emitter::new(&detok, &[], &mut on_text).unwrap();
    let mut finish = FinishReason::Length;
    for token in 0..chunks.len() as u32 {
        if let Some(reason) = emitter.push(&detok, token, &rules).unwrap() {
            finish = reason;
            break;
        }
    }
    let (text, _, finish) = emitter.finish(&detok, finish, &rules).unwrap();
    assert_eq!(text, pieces.concat());
    (pieces, finish == FinishReason::Stop)
}

/// `text` cut before every character whose flag in `cuts` is set.
fn cut(text: &str, cuts: &[bool]) -> Vec<String> {
    let mut chunks = vec![String::new()];
    for (i, c) in text.chars().enumerate() {
        if i > 0 && cuts.get(i).copied().unwrap_or(false) {
            chunks.push(String::new());
        }
        chunks.last_mut().unwrap().push(c);
    }
    chunks
}

/// A string of 1 to `len` characters of `alphabet`.
fn word(alphabet: &'static [char], len: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet), 1..=len)
        .prop_map(|chars| chars.into_iter().collect())
}

/// Several alphabets: multi-byte characters that share leading bytes (é U+00E9 and ë U+00EB;
/// € U+20AC), and a two-letter one where stop strings overlap a lot.
const MIXED: &[char] = &['a', 'b', 'é', 'ë', '€', '<'];
const DENSE: &[char] = &['a', 'b'];

fn case(
    alphabet: &'static [char],
    count: usize,
    stop_len: usize,
    text_len: usize,
) -> impl Strategy<Value = (Vec<String>, String, Vec<bool>)> {
    (
        prop::collection::vec(word(alphabet, stop_len), 1..=count),
        prop::collection::vec(prop::sample::select(alphabet), 0..=text_len)
            .prop_map(|chars| chars.into_iter().collect::<String>()),
        prop::collection::vec(any::<bool>(), 0..=text_len),
    )
}

fn check(stops: &[String], text: &str, cuts: &[bool]) -> std::result::Result<(), TestCaseError> {
    let matcher = StopStrings::new(stops).unwrap();
    // Every prefix of the text, as the stateless calls see it.
    for (end, _) in text.char_indices().chain([(text.len(), ' ')]) {
        let prefix = &text[..end];
        prop_assert_eq!(
            matcher.find(prefix),
            naive_find(stops, prefix),
            "{:?}",
            prefix
        );
        prop_assert_eq!(
            matcher.partial_len(prefix),
            naive_partial(stops, prefix),
            "{:?}",
            prefix
        );
    }
    // The text streamed in random tokens.
    let chunks = cut(text, cuts);
    prop_assert_eq!(engine_stream(stops, &chunks), naive_stream(stops, &chunks));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn matches_the_naive_matcher_on_mixed_text((stops, text, cuts) in case(MIXED, 5, 4, 40)) {
        check(&stops, &text, &cuts)?;
    }

    #[test]
    fn matches_the_naive_matcher_on_overlapping_stops(
        (stops, text, cuts) in case(DENSE, MAX_STOP_STRINGS, 12, 60)
    ) {
        check(&stops, &text, &cuts)?;
    }
}

#[test]
fn matches_the_naive_matcher_on_the_longest_allowed_stops() {
    // a…ab and its variants: the naive matcher's worst case, each a near miss of the others.
    let stops: Vec<String> = (0..MAX_STOP_STRINGS)
        .map(|i| {
            let mut s = "a".repeat(MAX_STOP_BYTES - 1 - i);
            s.push('b');
            s.push_str(&"a".repeat(i));
            s
        })
        .collect();
    let matcher = StopStrings::new(&stops).unwrap();
    let text = "a".repeat(3 * MAX_STOP_BYTES);
    assert_eq!(matcher.partial_len(&text), naive_partial(&stops, &text));
    assert_eq!(matcher.partial_len(&text), MAX_STOP_BYTES - 1);
    let text = format!("{}b{}", "a".repeat(300), "a".repeat(20));
    assert_eq!(matcher.find(&text), naive_find(&stops, &text));
    assert!(matcher.find(&text).is_some());
    let chunks = cut(&text, &[true; 400]);
    assert_eq!(
        engine_stream(&stops, &chunks),
        naive_stream(&stops, &chunks)
    );
}

#[test]
fn the_issue_22_lists_are_refused_before_any_generation() {
    // 40 000 stop strings (item 5's repro) are refused by count...
    let many: Vec<String> = (0..40_000).map(|i| format!("stop {i}")).collect();
    let options = GenerateOptions {
        stop: many,
        ..GenerateOptions::default()
    };
    let e = options.end_rules(1024).unwrap_err();
    assert!(matches!(
        e,
        Error::StopLimit(StopLimit::TooMany { count: 40_000 })
    ));
    // ...and a megabyte-long one by length, naming its index without echoing it.
    let mut list = vec!["ok".to_string(); 3];
    list.push("x".repeat(1 << 20));
    let e = StopStrings::new(&list).unwrap_err();
    assert!(matches!(
        e,
        Error::StopLimit(StopLimit::TooLong { index: 3, .. })
    ));
    let message = e.to_string();
    assert!(message.starts_with("stop string 3 (\"xxx"), "{message}");
    assert!(message.len() < 200, "{message}");
}
