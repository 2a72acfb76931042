//! What `#[derive(Params)]` refuses at compile time, as a plugin author meets it: each case
//! is a plugin crate of its own (a path dependency on this crate, `cargo check --offline`)
//! whose compiler output must carry the derive's message; one crate that must compile keeps
//! the checks from refusing what is right.
//!
//! The crates live in one scratch workspace under cargo's `CARGO_TARGET_TMPDIR`, with their
//! own target directory (the outer `cargo test` holds the workspace's).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The stage every case exports, given its parameter struct `{params}`.
const STAGE: &str = r#"
pub struct Mine;
impl sieve_plugin::Sampler for Mine {
    fn apply(
        &mut self,
        _: &mut sieve_plugin::Candidates,
        _: &sieve_plugin::Context<'_>,
    ) -> Result<(), sieve_plugin::Error> {
        Ok(())
    }
}
impl sieve_plugin::Stage for Mine {
    const NAME: &'static str = "mine";
    const DOC: &'static str = "does nothing";
    type Params = {params};
    fn new(_: {params}, _: &sieve_plugin::BuildContext<'_>) -> Result<Self, sieve_plugin::Error> {
        Ok(Mine)
    }
}
sieve_plugin::export_plugin!(name = "mine", version = "0.1.0", stages = [Mine]);
"#;

/// `(crate, parameter struct name, source before the stage)`.
const CASES: [(&str, &str, &str); 4] = [
    (
        "named_params",
        "Params",
        r#"
use sieve_plugin::Range;
#[derive(sieve_plugin::Params)]
pub struct Params {
    /// added to the logit
    #[param(default = 1.0, range = Range::closed(-100.0, 100.0))]
    pub bias: f32,
}
"#,
    ),
    (
        "no_doc",
        "MineParams",
        r#"
use sieve_plugin::{Params, Range};
#[derive(Params)]
pub struct MineParams {
    /// added to the logit
    #[param(default = 1.0, range = Range::closed(-100.0, 100.0))]
    pub bias: f32,
    #[param(range = Range::closed(0.0, u32::MAX as f64))]
    pub token: u32,
}
"#,
    ),
    (
        "default_out_of_range",
        "MineParams",
        r#"
use sieve_plugin::{Params, Range};
#[derive(Params)]
pub struct MineParams {
    /// a probability
    #[param(default = 1.5, range = Range::closed(0.0, 1.0))]
    pub p: f64,
    /// a window
    #[param(default = -2, range = Range::at_least(-1.0))]
    pub last_n: i64,
}
"#,
    ),
    (
        "accepted",
        "MineParams",
        r#"
use sieve_plugin::{Params, Range, Seed};
const TOP: f64 = 4.0;
#[derive(Params)]
pub struct MineParams {
    /// at the bound of a closed range
    #[param(default = 1.0, range = Range::closed(-1.0, 1.0))]
    pub p: f64,
    /// a window
    #[param(default = -1, range = Range::at_least(-1.0))]
    pub last_n: i64,
    /// a range that is not literal: left to the descriptor check
    #[param(default = 3, range = Range::closed(0.0, TOP))]
    pub k: usize,
    /// a flattened struct
    #[param(flatten)]
    pub shared: Shared,
    // A seed needs no `///`: its type brings its doc.
    pub seed: Seed,
}
#[derive(Params)]
pub struct Shared {
    /// shared by several stages
    #[param(default = 0.5, range = Range::open(0.0, 1.0))]
    pub shared: f32,
}
"#,
    ),
];

/// The scratch workspace, written once.
fn workspace() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("derive-errors");
        let plugin = Path::new(env!("CARGO_MANIFEST_DIR"));
        let members: Vec<String> = CASES.iter().map(|(name, ..)| format!("{name:?}")).collect();
        write(
            &dir.join("Cargo.toml"),
            &format!(
                "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
                members.join(", ")
            ),
        );
        // The versions the sieve workspace builds with, so the offline build finds them.
        let lock = plugin.join("../../Cargo.lock");
        std::fs::copy(lock, dir.join("Cargo.lock")).expect("copy Cargo.lock");
        for (name, params, source) in CASES {
            let manifest = format!(
                "[package]\nname = {name:?}\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [lib]\ncrate-type = [\"cdylib\"]\n\n\
                 [dependencies]\nsieve-plugin = {{ path = {:?} }}\n",
                plugin.to_str().expect("UTF-8 path")
            );
            write(&dir.join(name).join("Cargo.toml"), &manifest);
            let lib = format!("{source}{}", STAGE.replace("{params}", params));
            write(&dir.join(name).join("src/lib.rs"), &lib);
        }
        dir
    })
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Unchanged files keep their times, so cargo reuses its earlier checks.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// `cargo check`s crate `name`: whether it compiled, and the compiler's messages.
fn check(name: &str) -> (bool, String) {
    let dir = workspace();
    let out = Command::new(env!("CARGO"))
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("CARGO_TERM_COLOR", "never")
        .args(["check", "--offline", "--quiet", "-p", name])
        .output()
        .expect("run cargo check");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_struct_named_params_is_refused_with_a_fix() {
    let (ok, stderr) = check("named_params");
    assert!(!ok, "a struct named `Params` compiled");
    assert!(
        stderr.contains(
            "error: a parameter struct cannot be named `Params`: that is the name of the trait"
        ) && stderr.contains("e.g. `MineParams` for a stage `Mine`"),
        "{stderr}"
    );
    // The derive writes no impl for it, so none of its errors can suggest `dyn Params`.
    assert!(!stderr.contains("struct dyn"), "{stderr}");
}

#[test]
fn a_field_without_a_doc_comment_is_refused_by_name() {
    let (ok, stderr) = check("no_doc");
    assert!(!ok, "a field without `///` compiled");
    assert!(
        stderr.contains("parameter `token` of `MineParams` has no `///` doc comment"),
        "{stderr}"
    );
    assert!(!stderr.contains("parameter `bias`"), "{stderr}");
}

#[test]
fn a_literal_default_outside_a_literal_range_is_refused() {
    let (ok, stderr) = check("default_out_of_range");
    assert!(!ok, "a default outside its range compiled");
    assert!(
        stderr.contains("the default of `p`, 1.5, is outside its range [0, 1]"),
        "{stderr}"
    );
}

#[test]
fn what_is_right_compiles() {
    let (ok, stderr) = check("accepted");
    assert!(ok, "{stderr}");
}
