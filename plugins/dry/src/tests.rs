//! Vectors derived by hand from llama.cpp's DRY (`reference/semantics.md` §3.2): the windows,
//! restart limits, repeat counts and penalties are worked out in the comments.

use super::*;

/// `dry` with llama.cpp's defaults otherwise: multiplier 0.8, base 1.75, allowed length 2.
fn dry(breakers: &[Vec<u32>]) -> Dry {
    Dry::new(0.8, 1.75, 2, None, Breakers::from_token_lists(breakers))
}

/// The logits after `stage` ran on `vocab` zero logits with this history.
fn run(stage: &mut Dry, vocab: usize, history: &[u32]) -> Vec<f32> {
    let mut c = Candidates::from_logits(&vec![0.0; vocab]);
    stage
        .apply(&mut c, &Context::with_history(history))
        .unwrap();
    c.iter().map(|(_, l)| l).collect()
}

// Penalties, in llama.cpp's arithmetic: multiplier 0.8f32 = 0.800000011920929 (as f64),
// times 1.75^e in f64, rounded to f32:
// e = 0: 0.800000011920929 → 0.8f32;
// e = 1: 1.4000000208616257 → 1.4f32 (1.39999997615814 is the nearer f32);
// e = 2: 0.800000011920929 · 3.0625 = 2.4500000365078449 → 2.45f32 (2.45000004768).
const E0: f32 = 0.8;
const E1: f32 = 1.4;
const E2: f32 = 2.45;

#[test]
fn the_token_that_would_extend_a_repeat_is_penalized() {
    // History 1 2 3 4 1 2 3 (indices 0..=6): the suffix "1 2 3" also ends at index 2
    // (count 3); no other earlier position holds a 3, so every other count is 0. The token
    // after index 2 is 4, which would make the repeat 4 long: L = 3, e = 3 − 2 = 1, 1.4.
    let logits = run(&mut dry(&[]), 6, &[1, 2, 3, 4, 1, 2, 3]);
    assert_eq!(logits, [0.0, 0.0, 0.0, 0.0, -E1, 0.0]);
}

#[test]
fn llama_cpp_s_example() {
    // a b c c b c y a b c (a=1, b=2, c=3, y=4): counts 0 0 3 1 0 2 0 0 0 0.
    // allowed 2: index 2 (3) → the next token c gets L = 3 (e = 1, 1.4); index 5 (2) → y
    // gets L = 2 (e = 0, 0.8); index 3 (count 1) is below the allowed length.
    let history = [1, 2, 3, 3, 2, 3, 4, 1, 2, 3];
    assert_eq!(run(&mut dry(&[]), 5, &history), [0.0, 0.0, 0.0, -E1, -E0]);
    // allowed 1: index 3 (count 1) → b gets L = 1 (e = 0, 0.8); c: e = 2 (2.45); y: e = 1.
    let mut stage = Dry::new(0.8, 1.75, 1, None, Breakers::new());
    assert_eq!(run(&mut stage, 5, &history), [0.0, 0.0, -E0, -E2, -E1]);
}

#[test]
fn a_token_keeps_its_longest_repeat() {
    // 5 9 1 2 5 9 1 2 5 9 (indices 0..=9). The suffix ends "… 5 9"; the positions holding a
    // 9 are 1 and 5. Reading back from index 5: 9 5 2 1 9 5 matches the last six tokens read
    // back, and index 0 is the start: count 6. From index 1: 9 5, count 2. Both are followed
    // by token 1, which keeps the longest: L = 6, e = 4, penalty 0.8 · 1.75⁴ =
    // 0.8 · 9.37890625.
    let history = [5, 9, 1, 2, 5, 9, 1, 2, 5, 9];
    let logits = run(&mut dry(&[]), 10, &history);
    let want = (0.8f32 as f64 * 9.378_906_25) as f32;
    assert_eq!(logits[1], -want);
    // No position other than 1 and 5 ends with a 9, so only token 1 is penalized.
    assert!(logits.iter().enumerate().all(|(t, &l)| t == 1 || l == 0.0));
}

#[test]
fn the_window_is_the_last_last_n_tokens() {
    // History 1 2 3 1 2. Whole history: "1 2" also ends at index 1 (count 2), followed by 3:
    // e = 0, penalty 0.8.
    let history = [1, 2, 3, 1, 2];
    assert_eq!(run(&mut dry(&[]), 4, &history), [0.0, 0.0, 0.0, -E0]);
    // last_n = 3: the window is 3 1 2, where "1 2" occurs only at the end: no penalty.
    let mut stage = Dry::new(0.8, 1.75, 2, Some(3), Breakers::new());
    assert_eq!(run(&mut stage, 4, &history), [0.0; 4]);
    // last_n = 0 is off.
    let mut stage = Dry::new(0.8, 1.75, 2, Some(0), Breakers::new());
    assert_eq!(run(&mut stage, 4, &history), [0.0; 4]);
}

#[test]
fn neutral_and_short_cases_are_identities() {
    // Multiplier 0.
    let mut stage = Dry::new(0.0, 1.75, 2, None, Breakers::new());
    assert_eq!(run(&mut stage, 4, &[1, 2, 3, 1, 2]), [0.0; 4]);
    // A window no longer than the allowed length: 1 1 (n = 2 <= 2).
    assert_eq!(run(&mut dry(&[]), 3, &[1, 1]), [0.0; 3]);
    // Empty history.
    assert_eq!(run(&mut dry(&[]), 3, &[]), [0.0; 3]);
}

#[test]
fn a_breaker_limits_the_repeat_length() {
    // 9 1 2 4 9 1 2 with breaker [9]: scanning back, 2, 1, then 9 at distance 2: R = 2.
    // The suffix "9 1 2" also ends at index 2 (true count 3), capped to 2; the next token 4
    // gets L = 2, e = 0: 0.8 (uncapped it would be L = 3, 1.4).
    let logits = run(&mut dry(&[vec![9]]), 10, &[9, 1, 2, 4, 9, 1, 2]);
    assert_eq!(logits[4], -E0);
    // Without the breaker: 1.4. And 9 itself would extend nothing here.
    let logits = run(&mut dry(&[]), 10, &[9, 1, 2, 4, 9, 1, 2]);
    assert_eq!(logits[4], -E1);
}

#[test]
fn a_breaker_too_recent_turns_the_penalty_off() {
    // 1 2 1 2 9: the breaker is the last token, R = 0 < 2: nothing at all.
    assert_eq!(run(&mut dry(&[vec![9]]), 10, &[1, 2, 1, 2, 9]), [0.0; 10]);
    // 1 2 1 2 9 7: R = 1 < 2, still nothing.
    assert_eq!(
        run(&mut dry(&[vec![9]]), 10, &[1, 2, 1, 2, 9, 7]),
        [0.0; 10]
    );
}

#[test]
fn single_token_breakers_are_never_penalized() {
    // 1 2 9 1 2 with breaker [9]: R = 2 (9 at distance 2). "1 2" also ends at index 1
    // (count 2), followed by 9, a single-token breaker: not penalized.
    assert_eq!(run(&mut dry(&[vec![9]]), 10, &[1, 2, 9, 1, 2]), [0.0; 10]);
    // Without the breaker, 9 gets 0.8.
    assert_eq!(run(&mut dry(&[]), 10, &[1, 2, 9, 1, 2])[9], -E0);
}

#[test]
fn multi_token_breakers() {
    // 1 2 5 6 1 2 with breaker [5, 6]: 2, 1, 6 (no breaker starts with 6), then 5 at
    // distance 3 followed by its tail 6: R = 3 − 1 = 2. "1 2" also ends at index 1 (count 2),
    // followed by 5: the head of a two-token breaker is not a single-token breaker, so it is
    // penalized, 0.8.
    let logits = run(&mut dry(&[vec![5, 6]]), 8, &[1, 2, 5, 6, 1, 2]);
    assert_eq!(logits, [0.0, 0.0, 0.0, 0.0, 0.0, -E0, 0.0, 0.0]);
    // A head whose tail did not follow is no breaker: 1 2 5 7 1 2 5 7 1 2 (indices 0..=9)
    // holds 5 twice, each followed by 7, not 6, so R = 10. The 2s at indices 1 and 5 end
    // repeats of the suffix: from index 5 back, 2 1 7 5 2 1 matches the last six tokens read
    // back (count 6); from index 1, 2 1 (count 2). Both are followed by 5: L = 6, e = 4.
    let logits = run(&mut dry(&[vec![5, 6]]), 8, &[1, 2, 5, 7, 1, 2, 5, 7, 1, 2]);
    assert_eq!(logits[5], -((0.8f32 as f64 * 9.378_906_25) as f32));
}

#[test]
fn sparse_candidates_are_penalized_by_id() {
    // As in the first test: token 4 gets 1.4. Here the candidates are 4, 0 and 3.
    let mut c = Candidates::from_sparse(vec![4, 0, 3], vec![1.0, 2.0, 3.0], 6).unwrap();
    dry(&[])
        .apply(&mut c, &Context::with_history(&[1, 2, 3, 4, 1, 2, 3]))
        .unwrap();
    assert_eq!(
        c.iter().collect::<Vec<_>>(),
        [(4, 1.0 - E1), (0, 2.0), (3, 3.0)]
    );
}

#[test]
fn the_exponent_is_capped_so_the_penalty_stays_finite() {
    // FLOAT_MAX_LOG is llama.cpp's 88.7228391 as an f32.
    assert_eq!(FLOAT_MAX_LOG, "88.7228391".parse::<f32>().unwrap());
    // base 3: ln 3 = 1.0986123, 88.7228391 / 1.0986123 = 80.76 → cap 80.
    let stage = Dry::new(1.0, 3.0, 2, None, Breakers::new());
    assert_eq!(stage.max_exponent, 80);
    let capped = stage.penalty(2 + 80);
    assert!(capped.is_finite() && capped > 1e38, "{capped}");
    assert_eq!(stage.penalty(2 + 500), capped);
    assert!(stage.penalty(2 + 79) < capped);
    // 200 equal tokens: the suffix of length j + 1 ends at every j, the longest (199) at
    // index 198, followed by the token itself: e = 197, capped to 80; the logit stays finite.
    let mut stage = stage;
    let logits = run(&mut stage, 8, &[7; 200]);
    assert_eq!(logits[7], -capped);
    // base 1 (not above 1.000001): no cap, and every penalty is the multiplier.
    let stage = Dry::new(0.5, 1.0, 2, None, Breakers::new());
    assert_eq!((stage.max_exponent, stage.penalty(1000)), (0, 0.5));
}

fn params(breakers: Vec<Breaker>) -> DryParams {
    let breakers = breakers
        .into_iter()
        .map(|b| match b {
            Breaker::Text(s) => Value::Str(s),
            Breaker::Ids(ids) => {
                Value::List(ids.into_iter().map(|i| Value::Int(i.into())).collect())
            }
        })
        .collect();
    DryParams {
        multiplier: 0.8,
        base: 1.75,
        allowed_length: 2,
        last_n: -1,
        breakers,
    }
}

fn create(breakers: Vec<Breaker>, vocab: Option<&Vocab>) -> Result<Dry, Error> {
    <Dry as Stage>::new(params(breakers), &BuildContext { seed: 0, vocab })
}

#[test]
fn string_breakers_resolve_through_the_vocabulary() {
    let vocab = Vocab::new(
        ["a", "b", "\n", "x\n", ":", "c"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect(),
        vec![],
    );
    let stage = create(
        vec![Breaker::Text("\n".into()), Breaker::Ids(vec![5])],
        Some(&vocab),
    )
    .unwrap();
    let singles: Vec<u32> = (0..6)
        .filter(|&t| stage.breakers.is_single_token(t))
        .collect();
    assert_eq!(singles, [2, 3, 5]);
}

#[test]
fn breaker_errors() {
    let text = |s: &str| vec![Breaker::Text(s.into())];
    let err = create(text("\n"), None).unwrap_err();
    let Error::InvalidArgument { param, message, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(param, "breakers");
    assert!(
        message.starts_with("breaker 0 (\"\\n\") is text, which needs the model's vocabulary")
            && message.contains("lists of token ids"),
        "{message}"
    );
    let err = create(text(""), None).unwrap_err();
    assert!(
        err.to_string().contains("breaker 0 is an empty string"),
        "{err}"
    );
    let err = create(vec![Breaker::Ids(vec![1]), Breaker::Ids(vec![])], None).unwrap_err();
    assert!(
        err.to_string().contains("breaker 1 is an empty list"),
        "{err}"
    );
    let vocab = Vocab::new(vec![b"a".to_vec(); 4], vec![]);
    let err = create(vec![Breaker::Ids(vec![2, 9])], Some(&vocab)).unwrap_err();
    assert!(
        err.to_string()
            .contains("breaker 0: token 9 is outside the vocabulary of 4 tokens"),
        "{err}"
    );
    // Token ids need no vocabulary.
    assert!(create(
        vec![Breaker::Ids(vec![13]), Breaker::Ids(vec![25, 26])],
        None
    )
    .is_ok());
}

#[test]
fn breakers_read_from_strings_or_id_lists() {
    let v = Value::List(vec![
        Value::Str(":".into()),
        Value::List(vec![Value::Int(25), Value::Int(26)]),
    ]);
    let Value::List(items) = &v else {
        unreachable!()
    };
    let b: Vec<Breaker> = items
        .iter()
        .enumerate()
        .map(|(i, v)| Breaker::read(i, v).unwrap())
        .collect();
    assert_eq!(b, [Breaker::Text(":".into()), Breaker::Ids(vec![25, 26])]);
    let message = |v: &Value| match Breaker::read(0, v).unwrap_err() {
        Error::InvalidArgument { param, message, .. } => (param, message),
        e => panic!("{e:?}"),
    };
    assert_eq!(
        message(&Value::Int(3)),
        (
            "breakers".into(),
            "breaker 0 must be a string or a list of token ids, found an integer".into()
        )
    );
    assert_eq!(
        message(&Value::List(vec![Value::Int(-1)])).1,
        "breaker 0: -1 is not a token id"
    );
}

#[test]
fn the_number_of_breakers_is_bounded_and_repeats_are_kept_once() {
    let many = vec![Breaker::Ids(vec![1]); crate::breakers::MAX_BREAKERS + 1];
    let err = create(many, None).unwrap_err().to_string();
    assert!(
        err.contains("257 breakers given; at most 256 are accepted"),
        "{err}"
    );
    // The most breakers, all the same: one tail for the head.
    let same = vec![Breaker::Ids(vec![1, 2]); crate::breakers::MAX_BREAKERS];
    let stage = create(same, None).unwrap();
    assert_eq!(stage.breakers.tails(1), [vec![2]]);
}
