//! A command parses its pipeline once: `sieve generate` with `--num-return`, `--beams` or
//! `--draft` builds every copy it needs from that one parse (counted by `sieve-dsl`'s
//! `count-parses` feature, per thread; the command runs in-process, on this thread).

use clap::Parser;
use sieve_cli::cli::{Cli, Command};

/// Runs `sieve generate ARGS` in-process and returns how many pipeline texts it parsed.
fn parses_of(args: &[&str]) -> usize {
    let mut argv = vec![
        "sieve",
        "generate",
        "--prompt",
        "Once upon a time",
        "-n",
        "3",
    ];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).unwrap();
    let Command::Generate(generate) = &cli.command else {
        panic!("not generate")
    };
    let registry = sieve_cli::pipeline::registry(&[]).unwrap();
    let before = sieve_dsl::parses();
    let mut out = Vec::new();
    if let Err(e) = sieve_cli::commands::generate::run(generate, &registry, &mut out) {
        panic!("{argv:?}: {e:?}");
    }
    assert!(!out.is_empty(), "{argv:?}");
    sieve_dsl::parses() - before
}

#[test]
fn num_return_parses_the_sampler_once() {
    let sampler = ["--sampler", "top_k(40) | temp(0.7)", "--seed", "7"];
    assert_eq!(
        parses_of(&[&sampler[..], &["--num-return", "4"]].concat()),
        1
    );
    assert_eq!(parses_of(&["--num-return", "4", "--seed", "7"]), 1);
}

#[test]
fn beams_and_draft_parse_once() {
    assert_eq!(parses_of(&["--beams", "3", "--num-return", "2"]), 1);
    assert_eq!(
        parses_of(&["--sampler", "greedy", "--beams", "2", "--num-return", "2"]),
        1
    );
    assert_eq!(
        parses_of(&[
            "--sampler",
            "temp(0.7)",
            "--draft",
            "embedded-draft",
            "--seed",
            "1"
        ]),
        1
    );
}
