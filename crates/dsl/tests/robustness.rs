//! Nothing a user types may panic, hang or overflow the stack: deep nesting, huge numbers,
//! NUL bytes, non-ASCII, very long input, and random token soup.

mod common;

use proptest::prelude::*;
use sieve_dsl::{Diagnostic, DiagnosticKind, PipelineSpec, MAX_NESTING};

fn parse(source: &str) -> Result<PipelineSpec, Diagnostic> {
    PipelineSpec::parse(source, &common::registry())
}

/// Checks that an error is well-formed for `source`: a span on character boundaries inside
/// the text, a 1-based position that agrees with the span, and a rendering of bounded size.
fn well_formed(source: &str, d: &Diagnostic) {
    assert!(
        d.span.start <= d.span.end && d.span.end <= source.len(),
        "{d:?}"
    );
    assert!(
        source.is_char_boundary(d.span.start) && source.is_char_boundary(d.span.end),
        "{d:?}"
    );
    let before = &source[..d.span.start];
    assert_eq!(d.line, before.matches('\n').count() + 1);
    assert_eq!(
        d.column,
        before.rsplit('\n').next().unwrap().chars().count() + 1
    );
    let rendered = d.render(source);
    assert!(
        rendered.len() < 4000,
        "rendering of {} bytes",
        rendered.len()
    );
    assert!(!d.to_string().is_empty());
}

fn error(source: &str) -> Diagnostic {
    let d = parse(source).expect_err("an error");
    well_formed(source, &d);
    d
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for n in [MAX_NESTING + 1, 10_000, 100_000] {
        for open in ["[", "{", "(", "[{("] {
            let deep = open.repeat(n);
            assert_eq!(error(&deep).kind, DiagnosticKind::TooDeep);
            let inside = format!("dry(breakers={deep}");
            assert_eq!(error(&inside).kind, DiagnosticKind::TooDeep);
        }
        let balanced = format!("dry(breakers={}{})", "[".repeat(n), "]".repeat(n));
        let d = error(&balanced);
        assert_eq!(d.kind, DiagnosticKind::TooDeep);
        assert_eq!(d.column, 13 + MAX_NESTING);
    }
}

#[test]
fn nesting_up_to_the_limit_parses() {
    // The argument list's parenthesis is one level, so the list may nest MAX_NESTING - 1 deep.
    let n = MAX_NESTING - 1;
    let source = format!("dry(breakers={}{})", "[".repeat(n), "]".repeat(n));
    let spec = parse(&source).unwrap();
    let mut v = spec.stages[0].get("breakers").unwrap();
    let mut depth = 0;
    while let sieve_core::Value::List(items) = v {
        depth += 1;
        match items.first() {
            Some(inner) => v = inner,
            None => break,
        }
    }
    assert_eq!(depth, n);
    // The same depth of maps.
    let maps = format!(
        "logit_bias({}{{}}{})",
        "{1: ".repeat(n - 1),
        "}".repeat(n - 1)
    );
    assert!(parse(&maps).is_ok());
}

#[test]
fn nesting_limit_fits_a_small_stack() {
    // Whatever thread the caller parses on: 512 KiB is a quarter of a test thread's stack and
    // a sixteenth of a main thread's. (An unoptimized build uses about 8 KiB per level, an
    // optimized one less than 4 KiB.)
    let n = MAX_NESTING - 1;
    let source = format!("dry(breakers={}{})", "[".repeat(n), "]".repeat(n));
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || parse(&source).is_ok())
        .unwrap();
    assert!(handle.join().unwrap());
}

#[test]
fn odd_inputs_give_errors() {
    let cases = [
        "",
        " ",
        "\n\n",
        "|",
        "||",
        "top_k(",
        "top_k)",
        "top_k(40))",
        "(",
        ")",
        "\0",
        "top_k(\0)",
        "top_k(40)\0| greedy",
        "ťop_k",
        "top_k(k=ü)",
        "😀",
        "top_k(12345678901234567890123456789012345678901234567890)",
        "top_k(-12345678901234567890123456789012345678901234567890)",
        "temp(1e999)",
        "temp(-1e999)",
        "temp(1e99999999999999999999999999)",
        "grammar(\"\\u{}\")",
        "grammar(\"\\u{1234567}\")",
        "grammar(\"\\u{D800}\")",
        "grammar(\"\\u\")",
        "grammar(\"\\u{12\")",
        "grammar(\"\\",
        "grammar('",
        "logit_bias({[1]: 2})",
        "logit_bias({1: 2,, 3: 4})",
        "top_k(,)",
        "top_k(40,,)",
        "top_k(k=40=3)",
        "top_k(k==40)",
        "=",
        "top_k | | top_p",
        "top_k(40) | top_k(40) |",
        "top_k(.)",
        "top_k(-)",
        "top_k(+inf)",
        "temp(infinity)",
        "temp(-nan)",
        "temp(0x10)",
        "temp(1_000)",
        "temp(1.5.3)",
        "\u{feff}top_k",
        "top_k\u{a0}(40)",
    ];
    for source in cases {
        let _ = error(source);
    }
}

#[test]
fn integer_extremes() {
    let spec = parse("penalty(last_n=9223372036854775807)").unwrap();
    assert_eq!(
        spec.stages[0].get("last_n"),
        Some(&sieve_core::Value::Int(i64::MAX))
    );
    assert_eq!(
        error("penalty(last_n=9223372036854775808)").kind,
        DiagnosticKind::InvalidLiteral
    );
    // i64::MIN is a literal, though out of this parameter's range.
    assert_eq!(
        error("penalty(last_n=-9223372036854775808)").kind,
        DiagnosticKind::OutOfRange
    );
    assert_eq!(
        error("penalty(last_n=-9223372036854775809)").kind,
        DiagnosticKind::InvalidLiteral
    );
}

#[test]
fn very_long_inputs_are_linear() {
    const MB: usize = 1 << 20;
    // A valid pipeline of about 1 MB.
    let stage = "top_k(40) | ";
    let many = stage.repeat(MB / stage.len()) + "greedy";
    let spec = parse(&many).unwrap();
    assert_eq!(spec.stages.len(), MB / stage.len() + 1);
    // One 1 MB string.
    let big = format!("grammar(\"{}\")", "a".repeat(MB));
    let spec = parse(&big).unwrap();
    assert_eq!(
        spec.stages[0].get("schema"),
        Some(&sieve_core::Value::Str("a".repeat(MB)))
    );
    // A list of 50 000 items.
    let list = format!("dry(breakers=[{}])", "'x', ".repeat(50_000));
    assert!(parse(&list).is_ok());
    // Errors in 1 MB inputs.
    assert_eq!(error(&"x".repeat(MB)).kind, DiagnosticKind::UnknownStage);
    assert_eq!(error(&"|".repeat(MB)).kind, DiagnosticKind::Syntax);
    assert_eq!(
        error(&format!("grammar(\"{}", "a".repeat(MB))).kind,
        DiagnosticKind::Syntax
    );
    assert_eq!(
        error(&format!("top_k({})", "9".repeat(MB))).kind,
        DiagnosticKind::InvalidLiteral
    );
    assert_eq!(
        error(&"top_k(40)\n".repeat(MB / 10)).kind,
        DiagnosticKind::Syntax
    );
    assert_eq!(error(&"\0".repeat(MB)).kind, DiagnosticKind::Syntax);
    assert_eq!(error(&"é".repeat(MB / 2)).kind, DiagnosticKind::Syntax);
}

/// Pieces of pipeline text, valid and not, for token soup.
const PIECES: &[&str] = &[
    "top_k",
    "top_p",
    "temp",
    "dry",
    "grammar",
    "logit_bias",
    "greedy",
    "dist",
    "k",
    "p",
    "x",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    "|",
    "=",
    ":",
    "\"",
    "'",
    "\\",
    "\\u{",
    "40",
    "-",
    "+",
    ".",
    "e",
    "inf",
    "0.5",
    " ",
    "\n",
    "\t",
    "é",
    "😀",
    "\0",
    "true",
    "1e999",
    "99999999999999999999",
    "\\n",
    "\\q",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..40)) {
        let source: String = pieces.concat();
        match parse(&source) {
            Ok(spec) => {
                let canonical = spec.to_string();
                prop_assert_eq!(parse(&canonical).unwrap(), spec);
            }
            Err(d) => well_formed(&source, &d),
        }
    }

    #[test]
    fn arbitrary_text_never_panics(source in any::<String>()) {
        if let Err(d) = parse(&source) {
            well_formed(&source, &d);
        }
    }
}
