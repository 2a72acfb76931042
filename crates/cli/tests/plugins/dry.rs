//! `dry` through `sieve apply`: vectors derived by hand from llama.cpp's DRY
//! (`reference/semantics.md` §3.2), and snapshots of fixed inputs. `sieve apply` has no
//! vocabulary, so breakers are token-id lists; the history is `--history`.

use crate::apply_json;
use crate::build::plugin_args;

/// `sieve apply --plugin libsieve_dry -s "<pipeline>" --logits <logits> --history <history>`.
fn dry(pipeline: &str, logits: &str, history: &str) -> (Vec<(u32, f32)>, u64) {
    let p = plugin_args(&["sieve_dry"]);
    let mut args = vec!["-s", pipeline, "--logits", logits, "--history", history];
    args.extend(p.iter().map(String::as_str));
    apply_json(&args)
}

fn logits(survivors: &[(u32, f32)]) -> Vec<f32> {
    survivors.iter().map(|&(_, l)| l).collect()
}

// llama.cpp's arithmetic: multiplier 0.8f32 (0.800000011920929 as f64) times 1.75^e in f64,
// rounded to f32: e = 0 → 0.8, e = 1 → 1.4000000208616257 → 1.4f32, e = 2 →
// 2.4500000365078449 → 2.45f32.

#[test]
fn the_continuation_of_a_repeat_is_penalized() {
    // History 1 2 3 4 1 2 3: the suffix "1 2 3" also ends at index 2 (nothing else earlier
    // ends with 3), followed by 4: L = 3, e = 1, 4's logit 0 − 1.4. The rest stay 0; greedy
    // takes the first maximum, token 0.
    let (out, selected) = dry("dry(breakers=[]) | greedy", "0,0,0,0,0,0", "1,2,3,4,1,2,3");
    assert_eq!(logits(&out), [0.0, 0.0, 0.0, 0.0, -1.4, 0.0]);
    assert_eq!(selected, 0);
}

#[test]
fn llama_cpp_s_example_sequence() {
    // a b c c b c y a b c with a..c = 1..3, y = 4: repeat counts 0 0 3 1 0 2 0 0 0 0.
    // allowed_length 1: b (after index 3, count 1) e = 0 → 0.8; c (after index 2, count 3)
    // e = 2 → 2.45; y (after index 5, count 2) e = 1 → 1.4.
    let (out, _) = dry(
        "dry(allowed_length=1, breakers=[]) | greedy",
        "1,1,1,1,1",
        "1,2,3,3,2,3,4,1,2,3",
    );
    assert_eq!(logits(&out), [1.0, 1.0, 1.0 - 0.8, 1.0 - 2.45, 1.0 - 1.4]);
    // allowed_length 2: only c (e = 1) and y (e = 0).
    let (out, _) = dry(
        "dry(breakers=[]) | greedy",
        "1,1,1,1,1",
        "1,2,3,3,2,3,4,1,2,3",
    );
    assert_eq!(logits(&out), [1.0, 1.0, 1.0, 1.0 - 1.4, 1.0 - 0.8]);
}

#[test]
fn breakers_limit_and_stop_penalties() {
    // 9 1 2 4 9 1 2, breaker [9]: the last 9 is 2 tokens back, so repeats are capped at 2;
    // "9 1 2" also ends at index 2 (count 3 → 2), followed by 4: e = 0 → 0.8 (1.4 without
    // the breaker).
    let history = "9,1,2,4,9,1,2";
    let (out, _) = dry(
        "dry(breakers=[[9]]) | greedy",
        "0,0,0,0,0,0,0,0,0,0",
        history,
    );
    assert_eq!(out[4], (4, -0.8));
    let (out, _) = dry("dry(breakers=[]) | greedy", "0,0,0,0,0,0,0,0,0,0", history);
    assert_eq!(out[4], (4, -1.4));
    // 1 2 9 1 2, breaker [9]: "1 2" also ends at index 1, followed by 9, a single-token
    // breaker: never penalized.
    let (out, _) = dry(
        "dry(breakers=[[9]]) | greedy",
        "0,0,0,0,0,0,0,0,0,0",
        "1,2,9,1,2",
    );
    assert!(logits(&out).iter().all(|&l| l == 0.0), "{out:?}");
    // Two-token breaker [5, 6] in 1 2 5 6 1 2: the 5 is 3 back and followed by 6, R = 2;
    // "1 2" also ends at index 1, followed by 5 (a head, not a single-token breaker): 0.8.
    let (out, _) = dry(
        "dry(breakers=[[5, 6]]) | greedy",
        "0,0,0,0,0,0,0,0",
        "1,2,5,6,1,2",
    );
    assert_eq!(logits(&out), [0.0, 0.0, 0.0, 0.0, 0.0, -0.8, 0.0, 0.0]);
}

#[test]
fn neutral_values_are_identities() {
    let history = "1,2,3,4,1,2,3";
    for pipeline in [
        "dry(multiplier=0, breakers=[]) | greedy",
        "dry(last_n=0, breakers=[]) | greedy",
        "dry(last_n=3, breakers=[]) | greedy",
        // The longest repeat here is 3 ("1 2 3"): free under allowed_length 4.
        "dry(allowed_length=4, breakers=[]) | greedy",
    ] {
        let (out, _) = dry(pipeline, "0,0,0,0,0,0", history);
        assert!(
            logits(&out).iter().all(|&l| l == 0.0),
            "{pipeline}: {out:?}"
        );
    }
}

#[test]
fn snapshots() {
    let p = plugin_args(&["sieve_dry"]);
    let mut report = String::new();
    for (pipeline, logits, history) in [
        (
            "dry(breakers=[[13]]) | greedy",
            "2.5,1,0.5,3,-1,2,0,1.5,-inf,0.25,1,2,3,4",
            "3,5,7,1,13,3,5,7,1,3,5,7",
        ),
        (
            "dry(multiplier=1.5, base=2, allowed_length=1, last_n=8, breakers=[[0, 1]]) | greedy",
            "1,2,3,4,5,6,7,8",
            "2,3,4,2,3,4,0,1,2,3,4,2,3",
        ),
        (
            "top_k(4) | dry(breakers=[]) | greedy",
            "5,4,3,2,1,0",
            "0,1,2,3,0,1,2",
        ),
    ] {
        let mut args = vec![
            "apply",
            "--json",
            "--seed",
            "1",
            "-s",
            pipeline,
            "--logits",
            logits,
            "--history",
            history,
        ];
        args.extend(p.iter().map(String::as_str));
        report.push_str(&format!(
            "$ sieve apply -s '{pipeline}' --logits {logits} --history {history}\n"
        ));
        report.push_str(&crate::ok(&args));
        report.push('\n');
    }
    insta::assert_snapshot!("dry_outputs", report);
}
