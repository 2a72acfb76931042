//! `time_batches`: every batch size gets its own sequences, their steps alternate round by
//! round, and every sequence is closed at the end.

mod common;

use common::HashModel;
use sieve_engine::{time_batches, BatchModel, BatchPrompts, Error, SeqId};

/// Whether any of the first `count` handles the model gave out is still open.
fn any_open(model: &HashModel, count: u32) -> bool {
    (1..=count).any(|i| model.position(SeqId(i)).is_ok())
}

#[test]
fn forked_sizes_prefill_once_then_alternate_their_steps() {
    let mut model = HashModel::new(50, 4.0, 1);
    let t = time_batches(&mut model, &[5, 6, 7], 4, &[1, 3], BatchPrompts::Forked).unwrap();
    // A prefill per size (the forks copy it), then rounds of one step per size.
    assert_eq!(model.feeds, [1, 1, 1, 3, 1, 3, 1, 3, 1, 3]);
    let shape: Vec<(usize, usize)> = t.iter().map(|b| (b.batch, b.decode.len())).collect();
    assert_eq!(shape, [(1, 4), (3, 4)]);
    assert!(!any_open(&model, 4));
}

#[test]
fn separate_prompts_prefill_every_sequence() {
    let mut model = HashModel::new(50, 4.0, 2);
    let t = time_batches(&mut model, &[5, 6], 2, &[2, 1], BatchPrompts::Separate).unwrap();
    assert_eq!(model.feeds, [1, 1, 1, 2, 1, 2, 1]);
    assert_eq!(t.iter().map(|b| b.batch).collect::<Vec<_>>(), [2, 1]);
    assert!(!any_open(&model, 3));
}

#[test]
fn runs_that_do_not_fit_fail_before_any_step() {
    let mut model = HashModel::new(50, 4.0, 3);
    model.context = 6;
    let err = time_batches(&mut model, &[5, 6, 7], 4, &[2], BatchPrompts::Forked).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ContextOverflow {
                tokens: 7,
                context: 6
            }
        ),
        "{err}"
    );
    assert!(model.feeds.is_empty());
    let err = time_batches(&mut model, &[], 1, &[2], BatchPrompts::Forked).unwrap_err();
    assert!(matches!(err, Error::EmptyPrompt), "{err}");
}

#[test]
fn a_failing_step_still_closes_every_sequence() {
    // Prefills (2), then the first round (2), then the second round's first step fails:
    // every sequence opened by then is closed.
    let mut model = HashModel::new(50, 4.0, 4);
    model.fail_at = Some(4);
    let err = time_batches(&mut model, &[5, 6, 7], 3, &[1, 2], BatchPrompts::Forked);
    assert!(matches!(err, Err(Error::Model(_))));
    assert_eq!(model.feeds, [1, 1, 1, 2]);
    assert!(!any_open(&model, 3));
}
