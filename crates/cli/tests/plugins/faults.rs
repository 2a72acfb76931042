//! Every fault a plugin file can have: a clear message naming the file (and the stage), an
//! exit code, and a process that survives to report it.

use crate::build::{lib, plugin_args, redact};
use crate::{sieve, sieve_with};

#[test]
fn faults_are_reported_with_the_file_and_the_stage() {
    let faulty = plugin_args(&["sieve_test_faulty"]);
    let faulty: Vec<&str> = faulty.iter().map(String::as_str).collect();
    let dry = lib("sieve_dry");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["samplers", "--plugin", lib("sieve_test_wrong_abi")], 2),
        (vec!["samplers", "--plugin", lib("sieve_test_no_entry")], 2),
        (vec!["samplers", "--plugin", "/no/such/libplugin.so"], 2),
        (
            vec![
                "samplers",
                "--plugin",
                lib("sieve_top_n_sigma"),
                "--plugin",
                lib("sieve_test_duplicate"),
            ],
            2,
        ),
        (
            vec!["check", "--plugin", lib("sieve_test_shadow"), "top_k"],
            2,
        ),
        (
            [&["check"], &faulty[..], &["panics(at=\"create\")"]].concat(),
            2,
        ),
        (
            [
                &["apply", "-s", "panics | greedy", "--logits", "1,2"],
                &faulty[..],
            ]
            .concat(),
            1,
        ),
        (
            [
                &[
                    "apply",
                    "-s",
                    "panics(at=\"accept\") | greedy",
                    "--logits",
                    "1,2",
                    "--history",
                    "1",
                ][..],
                &faulty[..],
            ]
            .concat(),
            1,
        ),
        ([&["check"], &faulty[..], &["rejects(level=5)"]].concat(), 2),
        (vec!["check", "--plugin", &dry, "dry"], 2),
    ];
    let mut report = String::new();
    for (args, code) in &cases {
        let run = sieve(args);
        assert_eq!(run.code, *code, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        let shown: Vec<String> = args
            .iter()
            .map(|a| redact(a))
            .map(|a| {
                if a.contains([' ', '(']) {
                    format!("'{a}'")
                } else {
                    a
                }
            })
            .collect();
        report.push_str(&format!(
            "$ sieve {}\n{}[exit {}]\n\n",
            shown.join(" "),
            redact(&run.stderr),
            run.code
        ));
    }
    insta::assert_snapshot!("plugin_faults", report);
}

#[test]
fn a_file_that_is_not_a_library() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir
        .path()
        .join(format!("libfake.{}", std::env::consts::DLL_EXTENSION));
    std::fs::write(&fake, "just text").unwrap();
    let run = sieve(&["samplers", "--plugin", fake.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    let want = format!("error: plugin {}: not a loadable library: ", fake.display());
    assert!(run.stderr.starts_with(&want), "{}", run.stderr);
    // The same file found through SIEVE_PLUGIN_PATH.
    let run = sieve_with(&["samplers"], Some(dir.path().to_str().unwrap()));
    assert_eq!(run.code, 2);
    assert!(run.stderr.starts_with(&want), "{}", run.stderr);
}

#[test]
fn an_unreadable_plugin_path_directory() {
    let run = sieve_with(&["samplers"], Some("/no/such/plugin/dir"));
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: SIEVE_PLUGIN_PATH: directory /no/such/plugin/dir: "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_stage_that_panics_only_where_told_works_elsewhere() {
    // `panics(at="accept")` panics in accept only: without a history (no accept call) the
    // pipeline runs to the end.
    let faulty = plugin_args(&["sieve_test_faulty"]);
    let mut args = vec![
        "apply",
        "-s",
        "panics(at=\"accept\") | greedy",
        "--logits",
        "1,3,2",
    ];
    args.extend(faulty.iter().map(String::as_str));
    let run = sieve(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("selected: 1"), "{}", run.stdout);
}

#[test]
fn a_plugin_failing_in_generate_is_reported_once_with_exit_code_1() {
    let faulty = plugin_args(&["sieve_test_faulty"]);
    let mut args = vec![
        "generate",
        "--prompt",
        "Hi",
        "-n",
        "2",
        "--seed",
        "1",
        "-s",
        "panics(at=\"apply\") | greedy",
    ];
    args.extend(faulty.iter().map(String::as_str));
    let run = sieve(&args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let said = "panics was told to panic in apply";
    assert_eq!(run.stderr.matches(said).count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: sampling: stage `panics`: plugin "),
        "{}",
        run.stderr
    );
}
