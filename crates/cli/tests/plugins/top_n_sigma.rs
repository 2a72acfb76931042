//! `top_n_sigma` through `sieve apply`: vectors derived by hand from llama.cpp's semantics,
//! and snapshots of fixed inputs.

use crate::apply_json;
use crate::build::plugin_args;

fn tns(pipeline: &str, logits: &str) -> (Vec<(u32, f32)>, u64) {
    let p = plugin_args(&["sieve_top_n_sigma"]);
    let mut args = vec!["-s", pipeline, "--logits", logits];
    args.extend(p.iter().map(String::as_str));
    apply_json(&args)
}

fn ids(out: &[(u32, f32)]) -> Vec<u32> {
    out.iter().map(|&(id, _)| id).collect()
}

/// 2 4 4 4 5 5 7 9: mean 5, deviations −3 −1 −1 −1 0 0 2 4, squares summing to 32, population
/// variance 4, σ = 2; maximum 9.
const TEXTBOOK: &str = "2,4,4,4,5,5,7,9";

#[test]
fn keeps_max_minus_n_sigma_and_above() {
    // n = 1: threshold 7, kept with equality.
    assert_eq!(ids(&tns("top_n_sigma(1) | greedy", TEXTBOOK).0), [6, 7]);
    // n = 2: threshold 5.
    assert_eq!(
        ids(&tns("top_n_sigma(2) | greedy", TEXTBOOK).0),
        [4, 5, 6, 7]
    );
    // n = 0 and n < 0: identity.
    assert_eq!(tns("top_n_sigma(0) | greedy", TEXTBOOK).0.len(), 8);
    assert_eq!(tns("top_n_sigma(-2) | greedy", TEXTBOOK).0.len(), 8);
}

#[test]
fn masked_logits_do_not_count() {
    // A -inf at id 2 changes nothing in μ = 5, σ = 2: n = 3 gives threshold 3, so the 2 (id
    // 0) goes. (Counting the -inf as 0 would give μ ≈ 4.444, σ ≈ 2.4545, threshold ≈ 1.636,
    // keeping the 2.)
    let (out, selected) = tns("top_n_sigma(3) | greedy", "2,4,-inf,4,4,5,5,7,9");
    assert_eq!(ids(&out), [1, 3, 4, 5, 6, 7, 8]);
    assert_eq!(selected, 8);
}

#[test]
fn the_kept_set_does_not_depend_on_temperature() {
    // n = 1.5: threshold (9 − 3)/t between the scaled 5s and 7.
    for t in ["0.3", "1", "2.5"] {
        let pipeline = format!("temp({t}) | top_n_sigma(1.5) | greedy");
        assert_eq!(ids(&tns(&pipeline, TEXTBOOK).0), [6, 7], "temp {t}");
    }
}

#[test]
fn snapshots() {
    let p = plugin_args(&["sieve_top_n_sigma"]);
    let mut report = String::new();
    for (pipeline, logits) in [
        ("top_n_sigma | dist", "2,4,4,4,5,5,7,9"),
        ("top_n_sigma(0.5) | dist", "1.5,-0.25,3.75,2,-inf,0,3.5,1"),
        (
            "top_k(5) | top_n_sigma(1) | greedy",
            "0.1,0.9,0.3,0.8,0.5,0.2,0.7",
        ),
        ("temp(0.7) | top_n_sigma(2) | dist", "-3,-1,0,2,2.5,1,-2,3"),
    ] {
        let mut args = vec![
            "apply", "--json", "--seed", "7", "-s", pipeline, "--logits", logits,
        ];
        args.extend(p.iter().map(String::as_str));
        report.push_str(&format!(
            "$ sieve apply -s '{pipeline}' --logits {logits}\n"
        ));
        report.push_str(&crate::ok(&args));
        report.push('\n');
    }
    insta::assert_snapshot!("top_n_sigma_outputs", report);
}
