use std::sync::Arc;

use super::*;

fn logits() -> Vec<f32> {
    (0..50)
        .map(|i| ((i * 37 % 11) as f32) * 0.3 - 1.0)
        .collect()
}

fn seq(text: &str, seed: u64) -> Sequence {
    Sequence::new(
        text,
        seed,
        None,
        Arc::new(sieve_samplers::builtin_registry()),
    )
    .unwrap()
}

const PIPELINES: [&str; 5] = [
    "greedy",
    "temp(0.8)",
    "penalty(1.5) | top_k(10) | temp(1.3) | dist",
    "top_p(0.8) | min_p(0.05) | dist",
    "mirostat_v2(tau=3.0)",
];

#[test]
fn select_picks_what_sieve_apply_picks() {
    let history = [3u32, 7, 7, 12];
    for text in PIPELINES {
        for seed in [0u64, 1, 42, 9_999] {
            let mut chain = sieve::Chain::new(text, seed).unwrap();
            let want = chain.apply(&logits(), &history).unwrap();
            let mut s = seq(text, seed);
            for &t in &history {
                s.accept(t);
            }
            let got = s.select(&logits(), History::prompt(&history)).unwrap();
            assert_eq!(got, want.selected, "{text} seed {seed}");
        }
    }
}

#[test]
fn a_decoding_loop_draws_what_the_front_door_draws() {
    for text in PIPELINES {
        let want = sieve::Chain::new(text, 5)
            .unwrap()
            .draws(&logits(), &[1, 2], 12)
            .unwrap();
        let mut s = seq(text, 5);
        let mut history = vec![1u32, 2];
        for &t in &history.clone() {
            s.accept(t);
        }
        for _ in 0..12 {
            let h = History {
                tokens: &history,
                prompt_len: 2,
            };
            let t = s.select(&logits(), h).unwrap();
            s.accept(t);
            history.push(t);
        }
        assert_eq!(&history[2..], &want[..], "{text}");
    }
}

#[test]
fn probabilities_are_the_survivors_of_every_stage_but_the_selector() {
    let text = "top_k(5) | temp(0.7)";
    let mut chain = sieve::Chain::new(text, 0).unwrap();
    let outcome = chain.apply(&logits(), &[]).unwrap();
    let (ids, probs) = seq(text, 0)
        .probabilities(&logits(), History::prompt(&[]))
        .unwrap();
    let want_ids: Vec<u32> = outcome.survivors.iter().map(|s| s.id).collect();
    let want_p: Vec<f32> = outcome.survivors.iter().map(|s| s.p).collect();
    assert_eq!(ids, want_ids);
    assert_eq!(probs, want_p);
    assert!((probs.iter().sum::<f32>() - 1.0).abs() < 1e-6);
}

#[test]
fn step_rows_write_a_one_hot_row_or_the_distribution() {
    let mut row = logits();
    let token = seq("greedy", 0)
        .step_row(&mut row, History::prompt(&[]), Mode::Select)
        .unwrap()
        .unwrap();
    assert_eq!(row[token as usize], 0.0);
    assert_eq!(row.iter().filter(|x| x.is_finite()).count(), 1);

    let mut row = logits();
    let mut s = seq("top_k(4) | temp(2.0)", 0);
    assert_eq!(
        s.step_row(&mut row, History::prompt(&[]), Mode::Distribution)
            .unwrap(),
        None
    );
    let (ids, probs) = s.probabilities(&logits(), History::prompt(&[])).unwrap();
    assert_eq!(row.iter().filter(|x| x.is_finite()).count(), ids.len());
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f64 = row.iter().map(|&x| f64::from(x - max).exp()).sum();
    for (id, p) in ids.iter().zip(probs) {
        let q = f64::from(row[*id as usize] - max).exp() / total;
        assert!((q - f64::from(p)).abs() < 1e-6, "token {id}: {q} vs {p}");
    }
}

#[test]
fn fork_carries_the_accepted_tokens_and_reset_forgets_them() {
    let mut a = seq("penalty(3.0) | greedy", 0);
    let best = a.select(&logits(), History::prompt(&[])).unwrap();
    a.accept(best);
    let mut b = a.fork(1).unwrap();
    assert_eq!(b.accepted(), &[best]);
    let h = [best];
    let after = b.select(&logits(), History::prompt(&h)).unwrap();
    assert_ne!(
        after, best,
        "the penalty moved the forked copy off the token"
    );
    assert_eq!(a.select(&logits(), History::prompt(&h)).unwrap(), after);
    a.reset();
    assert!(a.accepted().is_empty());
}

#[test]
fn bad_input_is_an_error_naming_where() {
    let mut s = seq("greedy", 0);
    let mut nan = logits();
    nan[3] = f32::NAN;
    let err = s.select(&nan, History::prompt(&[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "logit 3 is NaN; logits must be finite or -inf"
    );
    let mut inf = logits();
    inf[2] = f32::INFINITY;
    let err = s.select(&inf, History::prompt(&[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "logit 2 is inf; logits must be finite or -inf"
    );
    // f32::MAX itself is a (strange but) finite logit.
    let mut max = logits();
    max[5] = f32::MAX;
    assert_eq!(s.select(&max, History::prompt(&[])).unwrap(), 5);
    let err = s.select(&logits(), History::prompt(&[99])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "history token 0 is 99, beyond the 50 logits"
    );
    let h = History {
        tokens: &[1],
        prompt_len: 2,
    };
    assert!(matches!(s.select(&logits(), h), Err(Error::Input(_))));
    let err = s
        .select(&[f32::NEG_INFINITY; 4], History::prompt(&[]))
        .unwrap_err();
    assert!(matches!(err, Error::Sampling(_)), "{err:?}");
    assert!(matches!(
        s.select(&[], History::prompt(&[])),
        Err(Error::Input(_))
    ));
}

#[test]
fn bad_text_is_a_pipeline_error_with_its_place() {
    let registry = Arc::new(sieve_samplers::builtin_registry());
    let err = Sequence::new("temp(0.7) | top_q(0.9)", 0, None, registry).unwrap_err();
    let Error::Pipeline {
        line,
        column,
        diagnostic,
        message,
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!((line, column), (1, 13));
    assert!(message.contains("unknown stage `top_q`"), "{message}");
    assert!(diagnostic.contains('^'), "{diagnostic}");
}

#[test]
fn modes_parse_and_refuse_other_words() {
    assert_eq!(Mode::parse("select").unwrap(), Mode::Select);
    assert_eq!(Mode::parse("distribution").unwrap(), Mode::Distribution);
    assert!(Mode::parse("sample").is_err());
}
