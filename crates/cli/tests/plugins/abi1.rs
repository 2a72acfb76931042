//! A plugin built by an earlier sieve (commit 227bd5d, before the plugin SDK moved to
//! `sieve-plugin`) with the same ABI version keeps loading and gives the same output as the
//! same plugin built now (`tests/fixtures/plugins/abi1/README.md` says how it was built).
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::path::Path;

use crate::build::lib;
use crate::ok;

/// The committed ABI v1 library.
fn old() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/plugins/abi1/libsieve_top_n_sigma.so");
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn an_abi1_library_from_an_earlier_sieve_gives_the_same_output() {
    let old = old();
    let new = lib("sieve_top_n_sigma");
    for pipeline in [
        "top_n_sigma(1.0)",
        "top_n_sigma(0.5) | greedy",
        "temp(0.7) | top_n_sigma(n=2) | dist(seed=9)",
        "top_k(3) | top_n_sigma(0.1)",
    ] {
        let run = |plugin: &str| {
            ok(&[
                "apply",
                "--json",
                "--seed",
                "5",
                "-s",
                pipeline,
                "--logits",
                "1.5,0.2,3.0,-inf,2.9,0.7,-1,2.2",
                "--plugin",
                plugin,
            ])
        };
        let (was, now) = (run(&old), run(new));
        assert!(was.contains("\"candidates\""), "{was}");
        assert_eq!(was, now, "{pipeline}");
    }
    // Its schema reads the same, and the canonical forms agree.
    let check = |plugin: &str| ok(&["check", "top_n_sigma", "--plugin", plugin]);
    assert_eq!(check(&old), check(new));
}
