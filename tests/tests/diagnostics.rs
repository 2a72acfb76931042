//! End-to-end diagnostics: every kind of mistake a user can make in a pipeline, compiled through
//! the public API (`sieve_dsl::compile`) against the real built-in registry, rendered with
//! `Diagnostic::render`. Each snapshot holds the kind, the one-line form and the rendered form;
//! the tests also check the kind and the exact text the span covers.
//!
//! # Checked by hand
//!
//! Every snapshot was read before it was accepted: the message names the mistake, the help
//! says how to fix it (nearest names, the valid range with its open or closed ends, the
//! signature), and the caret sits under the span asserted here. For the 10 000 nested brackets
//! the caret was checked (with `python3`) to sit under the 32nd `[` of the clipped line: with the
//! stage's `(` that is nesting level 33, the first beyond `MAX_NESTING` = 32.

use sieve_core::{BuildContext, Vocab};
use sieve_dsl::{Diagnostic, DiagnosticKind};
use sieve_tests::run;

/// The diagnostic `source` must give.
fn diagnostic(source: &str) -> Diagnostic {
    match run::try_compile(source, 42) {
        Ok(c) => panic!("`{source}` compiled to {}", c.spec),
        Err(d) => d,
    }
}

/// Kind, one-line form and rendered form.
fn report(source: &str, d: &Diagnostic) -> String {
    format!("{:?}\n{d}\n\n{}", d.kind, d.render(source))
}

/// Snapshots the diagnostic of `$source` under `$name` and checks its kind and where it points
/// (`$at`: the text the span must cover).
macro_rules! diag {
    ($name:ident, $source:expr, $kind:ident, $at:expr) => {
        #[test]
        fn $name() {
            let source: &str = &$source;
            let d = diagnostic(source);
            assert_eq!(d.kind, DiagnosticKind::$kind, "{}", d.render(source));
            let at: &str = $at;
            assert_eq!(&source[d.span.start..d.span.end], at, "span of {d}");
            let shown = if source.len() > 200 {
                format!("<{} bytes>", source.len())
            } else {
                source.to_string()
            };
            insta::assert_snapshot!(stringify!($name), report(source, &d), &shown);
        }
    };
}

diag!(syntax_error, "temp(0.7) | | top_k(40)", Syntax, "|");
diag!(syntax_unclosed, "top_k(40", Syntax, "");
diag!(
    unknown_stage_did_you_mean,
    "temp(0.7) | top_q(0.9)",
    UnknownStage,
    "top_q"
);
diag!(
    unknown_stage_far_from_any,
    "penalty(1.1) | frobnicate",
    UnknownStage,
    "frobnicate"
);
diag!(unknown_param, "top_p(q=0.9)", UnknownParam, "q");
diag!(duplicate_param, "top_k(40, k=20)", DuplicateParam, "k=20");
diag!(
    wrong_type_string_for_number,
    "temp(t=\"hot\")",
    WrongType,
    "\"hot\""
);
diag!(wrong_type_float_for_int, "top_k(4.5)", WrongType, "4.5");
diag!(out_of_range_top_p, "top_p(1.5)", OutOfRange, "1.5");
diag!(out_of_range_negative_top_k, "top_k(-1)", OutOfRange, "-1");
diag!(
    out_of_range_epsilon_open_bound,
    "epsilon(1)",
    OutOfRange,
    "1"
);
diag!(
    missing_required,
    "penalty(1.1) | temp() | dist",
    MissingArgument,
    "temp()"
);
diag!(missing_required_bare, "epsilon", MissingArgument, "epsilon");
diag!(too_many_args, "top_k(40, 2)", TooManyArguments, "2");
diag!(
    positional_after_named,
    "top_p(p=0.9, 2)",
    PositionalAfterNamed,
    "2"
);
diag!(
    selector_not_last,
    "greedy | top_k(40)",
    SelectorNotLast,
    "greedy"
);
diag!(empty_input, "", Syntax, "");
diag!(blank_input, "  \t\n ", Syntax, "");
diag!(
    nested_brackets_10000,
    format!("logit_bias({}{})", "[".repeat(10_000), "]".repeat(10_000)),
    TooDeep,
    "["
);
diag!(
    number_40_digits,
    "top_k(1234567890123456789012345678901234567890)",
    InvalidLiteral,
    "1234567890123456789012345678901234567890"
);
diag!(non_ascii_name, "temp(0.7) | tëmp(0.7)", Syntax, "ë");
diag!(non_ascii_first_letter, "température(0.7)", Syntax, "é");
diag!(
    logit_bias_plus_inf,
    "logit_bias({5: inf})",
    InvalidArgument,
    "{5: inf}"
);
diag!(
    logit_bias_text_key_without_vocab,
    "logit_bias({\"Hello\": 2.5})",
    InvalidArgument,
    "{\"Hello\": 2.5}"
);
diag!(
    multi_line,
    "temp(0.7)\n  | top_k(40)\n  | top_p(p=2)",
    OutOfRange,
    "2"
);

#[test]
fn every_builtin_compiles_with_its_defaults_or_required_values() {
    // The positive counterpart: the names the diagnostics suggest all exist.
    for source in [
        "greedy",
        "dist",
        "temp(1)",
        "top_k",
        "top_p",
        "min_p",
        "typical",
        "xtc",
        "penalty",
        "logit_bias({})",
        "no_repeat_ngram(0)",
        "epsilon(0)",
        "eta(0)",
        "mirostat",
        "mirostat_v2",
    ] {
        run::try_compile(source, 1).unwrap_or_else(|d| panic!("{}", d.render(source)));
    }
}

/// A four-token vocabulary for the tests of `logit_bias`'s text keys.
fn vocab() -> Vocab {
    let tokens = ["Hello", " world", "!", "\n"]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
    Vocab::new(tokens, vec![3])
}

/// The diagnostic `source` gives when built with [`vocab`].
fn diagnostic_with_vocab(source: &str) -> Diagnostic {
    let vocab = vocab();
    let cx = BuildContext {
        seed: 0,
        vocab: Some(&vocab),
    };
    match sieve_dsl::compile(source, &sieve_samplers::builtin_registry(), &cx) {
        Ok(c) => panic!("`{source}` compiled to {}", c.spec),
        Err(d) => d,
    }
}

#[test]
fn logit_bias_text_key_that_is_not_one_token() {
    let source = "logit_bias({\"Hello world\": 1.0})";
    let d = diagnostic_with_vocab(source);
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
    insta::assert_snapshot!(
        "logit_bias_text_key_not_one_token",
        report(source, &d),
        source
    );
}

#[test]
fn logit_bias_id_outside_the_vocabulary() {
    let source = "logit_bias({2: 1.0, 4: -inf})";
    let d = diagnostic_with_vocab(source);
    assert_eq!(d.kind, DiagnosticKind::InvalidArgument);
    insta::assert_snapshot!(
        "logit_bias_id_outside_vocabulary",
        report(source, &d),
        source
    );
}

#[test]
fn logit_bias_text_keys_resolve_with_a_vocabulary() {
    // "Hello" is token 0 and `0` names it too: the biases add up (2.5 − 0.5 = 2), and "!" (2)
    // is banned, so greedy picks token 0 over token 1 (1.5) and the banned token 2 (3.0).
    let vocab = vocab();
    let cx = BuildContext {
        seed: 0,
        vocab: Some(&vocab),
    };
    let source = "logit_bias({\"Hello\": 2.5, 0: -0.5, \"!\": -inf}) | greedy";
    let mut compiled = sieve_dsl::compile(source, &sieve_samplers::builtin_registry(), &cx)
        .unwrap_or_else(|d| panic!("{}", d.render(source)));
    let step = run::step(&mut compiled.pipeline, &[0.0, 1.5, 3.0, 0.0], &[]);
    assert_eq!(step.outcome, Ok(0));
    let logits: Vec<(u32, f32)> = step.candidates.iter().collect();
    assert_eq!(
        logits,
        vec![(0, 2.0), (1, 1.5), (2, f32::NEG_INFINITY), (3, 0.0)]
    );
}

/// Integer ranges are checked exactly, not through `f64` (where 2^53 + 1 rounds to 2^53 and
/// 4294967296 is still representable but 2^63 - 1 rounds up): the largest seed is 2^53 and
/// the largest `k` is `u32::MAX`, and one more is refused with the usual diagnostic.
#[test]
fn integer_ranges_are_exact() {
    let registry = sieve_samplers::builtin_registry();
    for ok in [
        "dist(seed=9007199254740992)",
        "dist(seed=-1)",
        "top_k(4294967295)",
        "top_k(0)",
    ] {
        sieve_dsl::PipelineSpec::parse(ok, &registry).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for (bad, value, range) in [
        (
            "dist(seed=9007199254740993)",
            "9007199254740993",
            "[-1, 9007199254740992]",
        ),
        (
            "dist(seed=9223372036854775807)",
            "9223372036854775807",
            "[-1, 9007199254740992]",
        ),
        ("dist(seed=-2)", "-2", "[-1, 9007199254740992]"),
        ("top_k(4294967296)", "4294967296", "[0, 4294967295]"),
        ("top_k(-1)", "-1", "[0, 4294967295]"),
    ] {
        let err = sieve_dsl::PipelineSpec::parse(bad, &registry).unwrap_err();
        assert_eq!(
            err.kind,
            sieve_dsl::DiagnosticKind::OutOfRange,
            "{bad}: {err}"
        );
        assert!(
            err.message.contains(&format!("= {value} is out of range")),
            "{bad}: {err}"
        );
        assert_eq!(
            err.help.as_deref(),
            Some(format!("valid range is {range}").as_str()),
            "{bad}"
        );
    }
}
