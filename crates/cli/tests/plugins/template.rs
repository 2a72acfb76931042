//! The template plugin: it works, it matches its built-in twin, and `sieve bench sampler`
//! times it.

use crate::build::plugin_args;
use crate::ok;

#[test]
fn mine_matches_logit_bias() {
    let p = plugin_args(&["mine"]);
    for (mine, builtin) in [
        ("mine(bias=2.5, token=0)", "logit_bias({0: 2.5})"),
        ("mine(-1.25, 3)", "logit_bias({3: -1.25})"),
        (
            "top_k(2) | mine(bias=10, token=1)",
            "top_k(2) | logit_bias({1: 10.0})",
        ),
        (
            "top_k(2) | mine(bias=10, token=0)",
            "top_k(2) | logit_bias({0: 10.0})",
        ),
    ] {
        let run = |pipeline: &str| {
            let mut args = vec!["apply", "--json", "--seed", "3", "-s", pipeline];
            args.extend(["--logits", "1,2,3,0.5"]);
            args.extend(p.iter().map(String::as_str));
            ok(&args)
        };
        assert_eq!(run(mine), run(builtin), "{mine}");
    }
}

#[test]
fn bench_sampler_runs_a_plugin() {
    let p = plugin_args(&["mine"]);
    let mut args = vec![
        "bench",
        "sampler",
        "-s",
        "mine(1.0, 7) | greedy",
        "--vocab",
        "1000",
        "--iters",
        "20",
        "--json",
    ];
    args.extend(p.iter().map(String::as_str));
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    assert_eq!(v["sampler"], "mine(bias=1.0, token=7) | greedy");
    assert_eq!(v["vocab"], 1000);
    assert!(v["median_us"].as_f64().unwrap() > 0.0);
}
