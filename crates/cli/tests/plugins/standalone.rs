//! The template as a plugin author uses it: copied out of the workspace into a crate of its
//! own (a `[workspace]` table, a `path` dependency on `crates/plugin`, the CPU flags of
//! `.cargo/config.toml`), built with `cargo build --offline`, and run with `sieve apply` and `sieve generate`.
//!
//! The build goes to `target/standalone-template` beside the workspace's own builds, so it is
//! reused between test runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ok;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `plugins/template/Cargo.toml` rewritten as a standalone crate's manifest, as the template's
/// README tells an author to write it.
fn standalone_manifest(root: &Path) -> String {
    let manifest = std::fs::read_to_string(root.join("plugins/template/Cargo.toml"))
        .expect("read the template's manifest");
    let plugin = root.join("crates/plugin");
    let mut out = String::new();
    for line in manifest.lines() {
        let line = match line.trim() {
            "version.workspace = true" => "version = \"0.1.0\"".to_string(),
            "edition.workspace = true" => "edition = \"2021\"".to_string(),
            "license.workspace = true" => "license = \"MIT OR Apache-2.0\"".to_string(),
            "rust-version.workspace = true" => "rust-version = \"1.92\"".to_string(),
            l if l.starts_with("sieve-plugin =") => {
                format!("sieve-plugin = {{ path = {:?} }}", plugin.to_str().unwrap())
            }
            _ => line.to_string(),
        };
        assert!(!line.contains("workspace = true"), "left: {line}");
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str("\n# Not a member of any enclosing workspace.\n[workspace]\n");
    out
}

#[test]
fn the_template_builds_outside_the_workspace_and_runs() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("mine");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::create_dir_all(krate.join(".cargo")).unwrap();
    std::fs::write(krate.join("Cargo.toml"), standalone_manifest(&root)).unwrap();
    std::fs::copy(
        root.join("plugins/template/src/lib.rs"),
        krate.join("src/lib.rs"),
    )
    .unwrap();
    // The same versions the workspace builds with, so the offline build finds them all.
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    std::fs::copy(
        root.join(".cargo/config.toml"),
        krate.join(".cargo/config.toml"),
    )
    .unwrap();
    let target = root.join("target/standalone-template");
    let out = Command::new(env!("CARGO"))
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .args(["build", "--offline", "--quiet"])
        .output()
        .expect("run cargo build");
    assert!(
        out.status.success(),
        "the standalone template did not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = target
        .join("debug")
        .join(format!("libmine.{}", std::env::consts::DLL_EXTENSION));
    let lib = lib.to_str().unwrap();
    let run = |pipeline: &str, plugin: Option<&str>| {
        let mut args = vec!["apply", "--json", "--seed", "1", "-s", pipeline];
        args.extend(["--logits", "1,2,3,0.5"]);
        if let Some(p) = plugin {
            args.extend(["--plugin", p]);
        }
        ok(&args)
    };
    assert_eq!(
        run("mine(2.5, 0) | greedy", Some(lib)),
        run("logit_bias({0: 2.5}) | greedy", None)
    );
    // And in `sieve generate` on the embedded model: the same tokens as the built-in bias.
    let tokens = |pipeline: &str, plugin: Option<&str>| {
        let mut args = vec![
            "generate", "--prompt", "Once", "-n", "8", "--json", "-s", pipeline,
        ];
        args.extend(["--seed", "1"]);
        if let Some(p) = plugin {
            args.extend(["--plugin", p]);
        }
        let report: serde_json::Value = serde_json::from_str(&ok(&args)).expect("JSON");
        report["tokens"].clone()
    };
    let with_plugin = tokens("mine(4.0, 5) | temp(0.9) | dist", Some(lib));
    assert_eq!(
        with_plugin,
        tokens("logit_bias({5: 4.0}) | temp(0.9) | dist", None)
    );
    assert!(
        with_plugin.as_array().is_some_and(|t| !t.is_empty()),
        "{with_plugin}"
    );
    // The library's name and version, from its export line, are listed with the stage.
    let listing = ok(&["samplers", "--plugin", lib]);
    assert!(listing.contains("mine  (plugin mine 0.1.0, "), "{listing}");

    // Built with `panic = "abort"`, a plugin is refused at compile time, with the reason.
    let out = Command::new(env!("CARGO"))
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_PROFILE_DEV_PANIC", "abort")
        .env_remove("RUSTFLAGS")
        .args(["check", "--offline", "--quiet"])
        .output()
        .expect("run cargo check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a panic = \"abort\" plugin compiled");
    assert!(
        stderr.contains("sieve plugins must be built with `panic = \"unwind\"`"),
        "{stderr}"
    );
}
