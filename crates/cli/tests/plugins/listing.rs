//! `sieve samplers` and `sieve check` with plugins: stages listed with their file, parameters
//! validated like built-ins', `SIEVE_PLUGIN_PATH` directories scanned.

use std::path::Path;

use crate::build::{lib, plugin_args, redact};
use crate::{ok, sieve, sieve_with};

/// The listing blocks (stage title, doc, parameters) of stages that came from a plugin.
fn plugin_blocks(listing: &str) -> String {
    listing
        .split("\n\n")
        .filter(|block| block.lines().next().is_some_and(|l| l.contains("$LIB")))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn samplers_lists_plugin_stages_with_their_file() {
    let args = plugin_args(&["sieve_dry", "sieve_top_n_sigma", "mine"]);
    let mut all = vec!["samplers"];
    all.extend(args.iter().map(String::as_str));
    let listing = redact(&ok(&all));
    // The built-ins are all still there.
    assert!(
        listing.contains("top_k  (built-in)") && listing.contains("greedy  (selector, built-in)")
    );
    insta::assert_snapshot!("samplers_plugin_stages", plugin_blocks(&listing));
}

#[test]
fn samplers_json_gives_the_origin() {
    let args = plugin_args(&["sieve_top_n_sigma"]);
    let mut all = vec!["samplers", "--json"];
    all.extend(args.iter().map(String::as_str));
    let v: serde_json::Value = serde_json::from_str(&ok(&all)).unwrap();
    let stage = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "top_n_sigma")
        .expect("top_n_sigma listed");
    assert_eq!(stage["origin"], lib("sieve_top_n_sigma"));
    assert_eq!(stage["selector"], false);
    assert_eq!(stage["params"][0]["name"], "n");
    assert_eq!(stage["params"][0]["default"], 1.0);
    assert_eq!(stage["params"][0]["range"]["min"], "-inf");
}

#[test]
fn the_plugin_path_directories_are_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let ext = std::env::consts::DLL_EXTENSION;
    let copy = dir.path().join(format!("libtnsigma.{ext}"));
    std::fs::copy(lib("sieve_top_n_sigma"), &copy).unwrap();
    std::fs::write(dir.path().join("README.txt"), "not a plugin, not loaded").unwrap();
    let var = std::env::join_paths([dir.path(), Path::new("")]).unwrap();
    let var = var.to_str().unwrap();
    let run = sieve_with(&["samplers"], Some(var));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "top_n_sigma  (plugin top_n_sigma 0.1.0, {})",
            copy.display()
        )),
        "{}",
        run.stdout
    );
    // Named again with --plugin: the same file is loaded once, not reported as a clash.
    let run = sieve_with(
        &[
            "check",
            "--plugin",
            copy.to_str().unwrap(),
            "top_n_sigma | greedy",
        ],
        Some(var),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "top_n_sigma(n=1.0) | greedy\n");
}

#[test]
fn an_explicit_plugin_wins_over_an_installed_copy() {
    // An installed copy on SIEVE_PLUGIN_PATH and a development build named with --plugin:
    // the --plugin file's stage is used, with a note; it is not "defined twice".
    let dir = tempfile::tempdir().unwrap();
    let ext = std::env::consts::DLL_EXTENSION;
    let installed = dir.path().join(format!("libtnsigma.{ext}"));
    std::fs::copy(lib("sieve_top_n_sigma"), &installed).unwrap();
    let var = dir.path().to_str().unwrap();
    let dev = lib("sieve_top_n_sigma");
    let run = sieve_with(&["samplers", "--plugin", dev], Some(var));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("top_n_sigma  (plugin top_n_sigma 0.1.0, {dev})")),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr,
        format!(
            "note: stage `top_n_sigma` is defined by --plugin {dev} and by {} (found on \
             SIEVE_PLUGIN_PATH); using the --plugin one\n",
            installed.display()
        )
    );
    // Two --plugin files defining one stage stay an error.
    let run = sieve_with(
        &[
            "samplers",
            "--plugin",
            dev,
            "--plugin",
            installed.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("defined twice"), "{}", run.stderr);
}

#[test]
fn check_validates_plugin_parameters_like_built_ins() {
    let p = plugin_args(&["sieve_dry", "sieve_top_n_sigma"]);
    let with = |pipeline: &'static str| -> Vec<&str> {
        let mut v: Vec<&str> = vec!["check"];
        v.extend(p.iter().map(String::as_str));
        v.push(pipeline);
        v
    };
    assert_eq!(
        ok(&with(
            "top_n_sigma(1.5) | dry(0, breakers=[[13], [25, 26]]) | greedy"
        )),
        "top_n_sigma(n=1.5) | dry(multiplier=0.0, base=1.75, allowed_length=2, last_n=-1, \
         breakers=[[13], [25, 26]]) | greedy\n"
    );
    let mut report = String::new();
    for pipeline in [
        "top_n_sigma(n=\"wide\")",
        "dry(multiplier=-1, breakers=[])",
        "dry(base=0.5, breakers=[])",
        "dry(last_n=-2, breakers=[])",
        "dry(breakers=[[13], 7])",
        "dry(breaker=[])",
        "top_n_sigmaa(1)",
    ] {
        let run = sieve(&with(pipeline));
        assert_eq!(run.code, 2, "{pipeline}: {}", run.stderr);
        report.push_str(&format!(
            "$ sieve check '{pipeline}'\n{}\n",
            redact(&run.stderr)
        ));
    }
    insta::assert_snapshot!("check_plugin_diagnostics", report);
}
