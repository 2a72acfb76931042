//! Parallel samples: K continuations of one prompt in one batch, each equal to a plain run
//! with its own pipeline, the prompt prefilled once.

mod common;

use common::{HashModel, Letters};
use sieve_core::Pipeline;
use sieve_engine::{
    generate, generate_parallel, BatchModel, FinishReason, GenerateOptions, Sequence,
};
use sieve_samplers::dist::Dist;
use sieve_samplers::temp::Temp;

fn sampling(seed: u64) -> Pipeline {
    Pipeline::new(vec![
        ("temp".to_string(), Box::new(Temp::new(0.8))),
        ("dist".to_string(), Box::new(Dist::new(seed))),
    ])
}

fn options(max_tokens: usize, eos: &[u32]) -> GenerateOptions<'static> {
    GenerateOptions {
        max_tokens,
        eos: eos.to_vec(),
        ..Default::default()
    }
}

#[test]
fn each_sample_equals_a_plain_run_with_its_seed() {
    let prompt = [3, 1, 4, 1, 5];
    for (k, eos) in [(1, vec![]), (4, vec![]), (6, vec![7u32, 11])] {
        let mut model = HashModel::new(16, 4.0, 0);
        let pipelines = (0..k).map(|i| sampling(42 + i as u64)).collect();
        let mut streamed = vec![String::new(); k];
        let got = generate_parallel(
            &mut model,
            &Letters,
            pipelines,
            &prompt,
            &options(12, &eos),
            &mut |i, text| streamed[i].push_str(text),
        )
        .unwrap();
        assert_eq!(got.len(), k);
        // One prefill, then one step per round while any sequence runs.
        let longest = got.iter().map(|g| g.tokens.len()).max().unwrap();
        assert_eq!(model.steps, longest, "k = {k}");
        let mut distinct = std::collections::BTreeSet::new();
        for (i, g) in got.iter().enumerate() {
            let mut plain_model = HashModel::new(16, 4.0, 0);
            let seq = plain_model.open();
            let mut one = Sequence::new(&mut plain_model, seq).unwrap();
            let plain = generate(
                &mut one,
                &Letters,
                &mut sampling(42 + i as u64),
                &prompt,
                &options(12, &eos),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(g.tokens, plain.tokens, "k = {k}, sample {i}");
            assert_eq!(g.text, plain.text);
            assert_eq!(g.finish, plain.finish);
            assert_eq!(streamed[i], g.text);
            distinct.insert(g.tokens.clone());
        }
        assert_eq!(distinct.len(), k, "different seeds, different samples");
        // Every sequence was closed.
        assert!(model.position(sieve_engine::SeqId(1)).is_err());
    }
}

#[test]
fn sequences_that_end_early_leave_the_batch() {
    let mut model = HashModel::new(8, 6.0, 3);
    let pipelines = (0..5).map(sampling).collect();
    let got = generate_parallel(
        &mut model,
        &Letters,
        pipelines,
        &[1, 2],
        &options(30, &[0, 1]),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(got.iter().any(|g| g.finish == FinishReason::Eos));
    for g in &got {
        assert!(g.tokens.len() <= 30);
        if g.finish == FinishReason::Eos {
            assert!([0, 1].contains(g.tokens.last().unwrap()));
        }
    }
}

#[test]
fn no_sample_or_no_token_is_no_work() {
    let mut model = HashModel::new(8, 1.0, 0);
    let got = generate_parallel(
        &mut model,
        &Letters,
        vec![],
        &[1],
        &options(5, &[]),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(got.is_empty());
    let got = generate_parallel(
        &mut model,
        &Letters,
        vec![sampling(1), sampling(2)],
        &[1],
        &options(0, &[]),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|g| g.tokens.is_empty()));
    assert_eq!(model.steps, 0);
    assert!(generate_parallel(
        &mut model,
        &Letters,
        vec![sampling(1)],
        &[],
        &options(5, &[]),
        &mut |_, _| {}
    )
    .is_err());
}
