//! Drives `sieve compare` through the real binary on the embedded model.

mod common;

use common::{ok_json, sieve};
use serde_json::Value;

fn compare_json(seed: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "compare",
        "--sampler",
        "greedy",
        "--sampler",
        "min_p(0.1)",
        "--prompt",
        "Once upon a time",
        "--prompt",
        "The cat",
        "--samples",
        "3",
        "--seed",
        seed,
        "-n",
        "12",
        "--json",
    ];
    args.extend_from_slice(extra);
    ok_json(&args)
}

/// The report without its one timing field.
fn deterministic(mut v: Value) -> Value {
    for p in v["pipelines"].as_array_mut().expect("pipelines") {
        p.as_object_mut().expect("object").remove("ms_per_token");
    }
    v
}

#[test]
fn compare_reports_every_metric_deterministically_and_draws_the_plot() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("q.svg");
    let first = compare_json("5", &["--plot", plot.to_str().unwrap()]);
    let pipelines = first["pipelines"].as_array().unwrap();
    assert_eq!(pipelines.len(), 2);
    assert_eq!(pipelines[0]["sampler"], "greedy");
    assert_eq!(
        pipelines[1]["sampler"],
        "min_p(p=0.1, min_keep=1) | dist(seed=-1)"
    );
    for p in pipelines {
        assert_eq!(p["samples"], 6);
        for key in [
            "distinct_1",
            "distinct_2",
            "distinct_3",
            "repeated_4gram_rate",
        ] {
            let x = p[key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{key} = {x}");
        }
        let lp = p["mean_logprob"].as_f64().unwrap();
        let ppl = p["perplexity"].as_f64().unwrap();
        assert!(lp <= 0.0 && (ppl - (-lp).exp()).abs() < 1e-9, "{p}");
        let f = &p["finish"];
        let n = f["eos"].as_u64().unwrap()
            + f["stop"].as_u64().unwrap()
            + f["length"].as_u64().unwrap();
        assert_eq!(n, 6);
    }
    // Greedy draws the same continuation for every seed: the samples of a prompt coincide.
    assert_eq!(pipelines[0]["pairwise_overlap"], 1.0);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("quality against diversity"),
        "{svg}"
    );
    // The same seed gives the same numbers (all but the time per token).
    assert_eq!(
        deterministic(compare_json("5", &[])),
        deterministic(first.clone())
    );
    // Another seed draws other samples for min_p (greedy stays).
    let other = deterministic(compare_json("6", &[]));
    assert_eq!(
        other["pipelines"][0],
        deterministic(first.clone())["pipelines"][0]
    );
    assert_ne!(other["pipelines"][1], deterministic(first)["pipelines"][1]);
}

#[test]
fn compare_checks_its_input_before_loading_the_model() {
    let run = sieve(&[
        "compare",
        "--model",
        "/no/such/dir",
        "--sampler",
        "top_q(1)",
        "--prompt",
        "x",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown stage `top_q`"),
        "{}",
        run.stderr
    );
    let empty = tempfile::NamedTempFile::new().unwrap();
    let run = sieve(&[
        "compare",
        "--sampler",
        "greedy",
        "--prompts",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("the file has no prompt"),
        "{}",
        run.stderr
    );
}
