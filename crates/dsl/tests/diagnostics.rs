//! Snapshots of the rendered diagnostic for every kind of mistake. The snapshots are the
//! specification of what a user sees: read them when they change.

mod common;

use sieve_dsl::{DiagnosticKind, PipelineSpec};

/// Kind, one-line form and rendered form of the error `source` must give.
fn diag(source: &str) -> String {
    let err = PipelineSpec::parse(source, &common::registry()).expect_err(source);
    format!("{:?}\n{err}\n\n{}", err.kind, err.render(source))
}

fn kind(source: &str) -> DiagnosticKind {
    PipelineSpec::parse(source, &common::registry())
        .expect_err(source)
        .kind
}

macro_rules! snap {
    ($name:ident, $source:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), diag($source), $source);
        }
    };
}

// Syntax.
snap!(syntax_empty, "");
snap!(syntax_whitespace_only, "  \n\t ");
snap!(syntax_lone_bar, "|");
snap!(syntax_trailing_bar, "top_k(40) |");
snap!(syntax_double_bar, "top_k(40) || top_p");
snap!(syntax_open_paren_at_end, "top_k(");
snap!(syntax_unclosed_arguments, "top_k(40");
snap!(syntax_unclosed_list, "dry(breakers=[\"a\", ");
snap!(syntax_unterminated_string, "grammar(\"abc) | greedy");
snap!(syntax_unterminated_single_quoted, "grammar('abc\\')");
snap!(syntax_missing_comma, "top_p(0.9 2)");
snap!(syntax_comma_between_stages, "top_k(40), top_p(0.9)");
snap!(syntax_hyphen_in_name, "top-k(40)");
snap!(syntax_bare_word_value, "grammar(json)");
snap!(syntax_arguments_without_parentheses, "top_k 40");
snap!(syntax_missing_value, "top_k(k=)");
snap!(syntax_map_without_colon, "logit_bias({13 -inf})");
snap!(syntax_non_ascii_in_name, "tëmp(0.7)");
snap!(syntax_non_ascii_name_start, "température(0.7)");
snap!(syntax_non_ascii_parameter, "top_p(ρ=0.9)");
snap!(syntax_non_ascii_punctuation, "top_k(40) ｜ top_p");
snap!(syntax_nul_byte, "top_k(40)\0");
snap!(syntax_nan_is_not_a_number, "temp(nan)");

// Literals.
snap!(
    literal_integer_out_of_range,
    "top_k(1234567890123456789012345678901234567890)"
);
snap!(literal_float_overflow, "temp(1e999)");
snap!(literal_letters_after_number, "top_k(40k)");
snap!(literal_exponent_without_digits, "temp(1e)");
snap!(literal_unknown_escape, "grammar(\"a\\qb\")");
snap!(
    literal_unicode_escape_out_of_range,
    "grammar(\"\\u{110000}\")"
);
snap!(literal_unicode_escape_bad_digit, "grammar(\"ok \\u{zz}\")");
snap!(literal_map_key_not_int_or_string, "logit_bias({1.5: 2})");

// Nesting.
snap!(
    nesting_too_deep,
    &format!("dry(breakers={})", "[".repeat(100))
);

// Validation.
snap!(unknown_stage_close, "temp(0.7) | top_q(0.9)");
snap!(unknown_stage_far, "banana(1)");
snap!(unknown_stage_alias, "temperature(0.7)");
snap!(unknown_param_close, "top_p(min_kep=2)");
snap!(unknown_param_far, "top_p(zzz=2)");
snap!(unknown_param_of_stage_without_params, "greedy(x=1)");
snap!(duplicate_positional_then_named, "top_k(40, k=50)");
snap!(duplicate_named, "top_p(p=0.5,\n      p=0.6)");
snap!(too_many_arguments, "top_k(40, 50)");
snap!(too_many_arguments_for_no_params, "greedy(1)");
snap!(positional_after_named, "top_p(p=0.5, 2)");
snap!(
    positional_after_named_past_the_end,
    "top_p(p=0.5, min_keep=2, 3)"
);
snap!(missing_argument, "top_k(40) | grammar | greedy");
snap!(missing_argument_empty_parens, "logit_bias()");
snap!(wrong_type_float_for_int, "top_k(40.0)");
snap!(wrong_type_string_for_int, "top_k(\"40\")");
snap!(wrong_type_int_for_string, "grammar(schema=42)");
snap!(wrong_type_string_for_list, "dry(breakers=\"\\n\")");
snap!(out_of_range_closed, "top_p(1.5)");
snap!(out_of_range_negative_int, "top_k(-1)");
snap!(out_of_range_open_bound, "penalty(repeat=0)");
snap!(out_of_range_infinity, "temp(-inf)");
snap!(selector_not_last, "greedy | top_k(40)");
snap!(
    multi_line_position,
    "top_k(40)\n  | top_p(0.9)\n  | top_q(2)"
);
snap!(tab_alignment, "top_k(40)\t| tmp(0.7)");

#[test]
fn no_selector_without_dist() {
    let mut registry = sieve_core::Registry::new();
    for entry in sieve_samplers::builtins()
        .into_iter()
        .filter(|e| e.info.name == "top_k")
    {
        registry.register(entry).unwrap();
    }
    let source = "top_k(40)";
    let err = PipelineSpec::parse(source, &registry).unwrap_err();
    assert_eq!(err.kind, DiagnosticKind::NoSelector);
    insta::assert_snapshot!(
        "no_selector_without_dist",
        format!("{err}\n\n{}", err.render(source)),
        source
    );
}

#[test]
fn every_kind_is_what_the_snapshot_says() {
    use DiagnosticKind::*;
    let cases = [
        ("", Syntax),
        ("top_k(", Syntax),
        ("grammar(\"abc", Syntax),
        ("top_k(99999999999999999999)", InvalidLiteral),
        ("grammar(\"\\x\")", InvalidLiteral),
        ("logit_bias({true: 1})", InvalidLiteral),
        ("top_q", UnknownStage),
        ("top_k(kk=1)", UnknownParam),
        ("top_k(1, k=2)", DuplicateParam),
        ("top_k(1, 2)", TooManyArguments),
        ("top_p(p=0.5, 1)", PositionalAfterNamed),
        ("grammar()", MissingArgument),
        ("top_k(true)", WrongType),
        ("top_p(2)", OutOfRange),
        ("dist | greedy", SelectorNotLast),
    ];
    for (source, expected) in cases {
        assert_eq!(kind(source), expected, "{source:?}");
    }
    assert_eq!(kind(&"[".repeat(MAX)), TooDeep);
}

const MAX: usize = sieve_dsl::MAX_NESTING + 1;

#[test]
fn the_first_error_in_text_order_wins() {
    // Both stages are wrong; the first is reported.
    assert_eq!(kind("top_q(1) | top_k(k=-1)"), DiagnosticKind::UnknownStage);
    assert_eq!(kind("top_k(k=-1) | top_q(1)"), DiagnosticKind::OutOfRange);
    // A syntax error before an unterminated string is reported as such.
    let err = PipelineSpec::parse("top_k(40)) | grammar(\"abc", &common::registry()).unwrap_err();
    assert_eq!((err.kind, err.column), (DiagnosticKind::Syntax, 10));
    assert!(err.message.contains("expected"), "{err}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let err = PipelineSpec::parse("grammar(\"éééé\") | top_q", &common::registry()).unwrap_err();
    assert_eq!((err.line, err.column), (1, 19));
    assert_eq!(err.span.start, 22);
}

snap!(syntax_missing_equals, "top_k(k 40)");
snap!(syntax_python_boolean, "dry(ignore_eos=True)");
