//! Beam search on the fixture models returns what transformers' `generate(num_beams=…)`
//! returned (`tests/fixtures/beams/<model>.json`, written by `tools/make_beam_fixtures.py`):
//! the same sequences token for token, best first, and `sequences_scores` within 1e-4, for
//! every case (beams 2–4, length penalties 1, 0, 2, −0.5, every early-stopping mode, one or N
//! sequences, repetition penalty and n-gram bans), on every CPU backend and both paths
//! ([`common::RUNS`]).

mod common;

use std::path::PathBuf;

use serde::Deserialize;
use sieve_backends::LoadedModel;
use sieve_core::{Pipeline, Sampler};
use sieve_engine::{beam_search, BeamOptions, EarlyStopping, FinishReason};
use sieve_samplers::greedy::Greedy;
use sieve_samplers::no_repeat_ngram::NoRepeatNgram;
use sieve_samplers::penalty::Penalty;

use common::{Run, RUNS};

/// The largest difference allowed between a score and transformers'.
const SCORE_TOLERANCE: f64 = 1e-4;

/// transformers' `early_stopping`: `true`, `false` or `"never"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Early {
    Bool(bool),
    Word(String),
}

/// One `generate` call and what it returned.
#[derive(Debug, Deserialize)]
struct Case {
    prompt: Vec<u32>,
    num_beams: usize,
    length_penalty: f64,
    early_stopping: Early,
    num_return_sequences: usize,
    max_new_tokens: usize,
    eos_token_id: Vec<u32>,
    repetition_penalty: Option<f32>,
    no_repeat_ngram_size: Option<usize>,
    sequences: Vec<Vec<u32>>,
    scores: Vec<f64>,
}

#[derive(Debug, Deserialize)]
struct Expectations {
    cases: Vec<Case>,
}

fn expectations(name: &str) -> Expectations {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/beams")
        .join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// transformers' processors as sieve stages: `repetition_penalty=r` is `penalty(repeat=r)`
/// over a window longer than any sequence, `no_repeat_ngram_size=n` is `no_repeat_ngram(n)`.
fn pipeline(case: &Case) -> Pipeline {
    let mut stages: Vec<(String, Box<dyn Sampler>)> = Vec::new();
    if let Some(r) = case.repetition_penalty {
        stages.push(("penalty".into(), Box::new(Penalty::new(r, 0.0, 0.0, 4096))));
    }
    if let Some(n) = case.no_repeat_ngram_size {
        stages.push(("no_repeat_ngram".into(), Box::new(NoRepeatNgram::new(n))));
    }
    stages.push(("greedy".into(), Box::new(Greedy::new())));
    Pipeline::new(stages)
}

fn options(case: &Case) -> BeamOptions<'static> {
    BeamOptions {
        length_penalty: case.length_penalty,
        early_stopping: match &case.early_stopping {
            Early::Bool(true) => EarlyStopping::True,
            Early::Bool(false) => EarlyStopping::False,
            Early::Word(w) => w.parse().unwrap(),
        },
        num_return: case.num_return_sequences,
        max_tokens: case.max_new_tokens,
        eos: case.eos_token_id.clone(),
        ..BeamOptions::new(case.num_beams)
    }
}

fn load(name: &str, run: Run) -> LoadedModel {
    run.load(name)
}

#[test]
fn beam_search_matches_transformers_on_every_fixture() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in common::FIXTURES {
        let expected = expectations(name);
        assert!(expected.cases.len() >= 30, "{name}: too few cases");
        for kind in RUNS {
            let mut model = load(name, kind);
            for (i, case) in expected.cases.iter().enumerate() {
                let pipelines = (0..case.num_beams).map(|_| pipeline(case)).collect();
                let out = beam_search(&mut model, pipelines, &case.prompt, &options(case))
                    .unwrap_or_else(|e| panic!("{name} on {kind}, case {i}: {e}"));
                let tokens: Vec<&Vec<u32>> = out.hypotheses.iter().map(|h| &h.tokens).collect();
                let want: Vec<&Vec<u32>> = case.sequences.iter().collect();
                let close = out
                    .hypotheses
                    .iter()
                    .zip(&case.scores)
                    .all(|(h, s)| (h.score - s).abs() <= SCORE_TOLERANCE);
                if tokens != want || !close {
                    let scores: Vec<f64> = out.hypotheses.iter().map(|h| h.score).collect();
                    failures.push(format!(
                        "{name} on {kind}, case {i} {case:?}:\n  got  {tokens:?} {scores:?}\n  want {want:?} {:?}",
                        case.scores
                    ));
                }
                for h in &out.hypotheses {
                    let eos = h
                        .tokens
                        .last()
                        .is_some_and(|t| case.eos_token_id.contains(t));
                    let finish = if eos {
                        FinishReason::Eos
                    } else {
                        FinishReason::Length
                    };
                    assert_eq!(h.finish, finish, "{name} on {kind}, case {i}");
                }
                checked += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
