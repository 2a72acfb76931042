//! The example of the crate documentation, run in CI: pinning a chain's output and a seeded
//! 20-draw sequence with insta. The snapshot values were checked by hand (see the comments).

#[test]
fn my_chain_keeps_three_tokens() {
    // top_k(3) keeps ids 2, 1, 0 (logits 3, 2, 1); temp(0.5) doubles them to 6, 4, 2; the
    // probabilities are e^6, e^4, e^2 over their sum: 0.8668, 0.1173, 0.0159.
    let mut chain = sieve::Chain::new("top_k(3) | temp(0.5)", 7).unwrap();
    insta::assert_yaml_snapshot!(chain.apply(&[1.0, 2.0, 3.0, 0.5], &[]).unwrap());
}

#[test]
fn my_chain_draws_the_same_twenty_tokens() {
    // Replayed independently by the Python oracle (tests/oracle: ChaCha8 stream of seed 7,
    // penalty, temperature and min-p formulas, inverse-CDF draw in candidate order) with
    // history [3, 3]: the same 20 tokens.
    let mut chain = sieve::Chain::new("penalty(1.3) | temp(0.8) | min_p(0.05)", 7).unwrap();
    let logits = [0.5, 1.0, 1.5, 2.0, 0.0, -1.0];
    insta::assert_json_snapshot!(chain.draws(&logits, &[3, 3], 20).unwrap());
}
