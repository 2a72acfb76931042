//! Builds the plugin cdylibs once per test run, with the cargo that runs the tests, so that a
//! fresh clone passes `cargo test --workspace`; cargo's JSON messages give each library's path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The plugin packages, and their library (target) names.
const PACKAGES: [(&str, &str); 8] = [
    ("sieve-plugin-dry", "sieve_dry"),
    ("sieve-plugin-top-n-sigma", "sieve_top_n_sigma"),
    ("sieve-plugin-template", "mine"),
    ("sieve-test-plugin-wrong-abi", "sieve_test_wrong_abi"),
    ("sieve-test-plugin-no-entry", "sieve_test_no_entry"),
    ("sieve-test-plugin-faulty", "sieve_test_faulty"),
    ("sieve-test-plugin-duplicate", "sieve_test_duplicate"),
    ("sieve-test-plugin-shadow", "sieve_test_shadow"),
];

fn build() -> HashMap<String, PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(&root)
        .args(["build", "--message-format=json-render-diagnostics"]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    for (package, _) in PACKAGES {
        cmd.args(["-p", package]);
    }
    let out = cmd.output().expect("run cargo build for the plugins");
    assert!(
        out.status.success(),
        "building the plugins failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut libs = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_cdylib = msg["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "cdylib"));
        if msg["reason"] != "compiler-artifact" || !is_cdylib {
            continue;
        }
        let name = msg["target"]["name"].as_str().expect("target name");
        let file = msg["filenames"][0].as_str().expect("artifact file");
        libs.insert(name.to_string(), PathBuf::from(file));
    }
    for (package, lib) in PACKAGES {
        assert!(
            libs.contains_key(lib),
            "cargo built no library for {package}"
        );
    }
    libs
}

/// The path of plugin library `name` (its target name, e.g. `sieve_dry`), built on first use.
pub fn lib(name: &str) -> &'static str {
    static LIBS: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    let libs = LIBS.get_or_init(build);
    libs.get(name)
        .unwrap_or_else(|| panic!("no plugin library {name}"))
        .to_str()
        .expect("UTF-8 path")
}

/// `--plugin <lib>` for each name.
pub fn plugin_args(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| ["--plugin".to_string(), lib(n).to_string()])
        .collect()
}

/// `text` with every plugin path shown as `$LIB/<file name>`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for (_, name) in PACKAGES {
        let path = lib(name);
        let file = Path::new(path).file_name().unwrap().to_str().unwrap();
        out = out.replace(path, &format!("$LIB/{file}"));
    }
    out
}
