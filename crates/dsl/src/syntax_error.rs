//! pest's "expected …" errors turned into diagnostics that speak the pipeline language, with a
//! hint for the usual mistakes (a trailing `|`, `top-k` for `top_k`, an unclosed bracket, a bare
//! word as a value, a non-ASCII name).

use alloc::string::String;
use alloc::vec::Vec;

use pest::error::{Error, ErrorVariant, InputLocation};

use crate::diagnostic::{clip, Diagnostic, DiagnosticKind};
use crate::grammar::Rule;
use crate::span::{line_column, Span};

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// What the parser would have accepted, in words, most specific first; empty for rules that
/// say nothing to a user.
fn expected_word(rule: Rule) -> (u8, &'static str) {
    match rule {
        Rule::stage | Rule::stage_name => (0, "a stage name"),
        Rule::arg | Rule::param_name => (1, "an argument"),
        Rule::number
        | Rule::string
        | Rule::boolean
        | Rule::list
        | Rule::map
        | Rule::lbracket
        | Rule::lbrace => (2, "a value"),
        Rule::entry => (3, "a `key: value` entry"),
        Rule::equals => (4, "`=`"),
        Rule::colon => (5, "`:`"),
        Rule::open => (6, "`(`"),
        Rule::comma => (7, "`,`"),
        Rule::close => (8, "`)`"),
        Rule::rbracket => (9, "`]`"),
        Rule::rbrace => (10, "`}`"),
        Rule::bar => (11, "`|`"),
        Rule::EOI => (12, "end of input"),
        _ => (u8::MAX, ""),
    }
}

/// "`a`, `b` or `c`".
fn join(words: &[&str]) -> String {
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == words.len() { " or " } else { ", " });
        }
        out.push_str(w);
    }
    out
}

fn expected(positives: &[Rule]) -> String {
    let mut words: Vec<(u8, &str)> = positives
        .iter()
        .map(|&r| expected_word(r))
        .filter(|w| !w.1.is_empty())
        .collect();
    // "an argument" already covers "a value".
    if words.iter().any(|w| w.0 == 1) {
        words.retain(|w| w.0 != 2);
    }
    words.sort_unstable();
    words.dedup();
    let words: Vec<&str> = words.into_iter().map(|w| w.1).collect();
    join(&words)
}

/// What stands at `pos`, in words, and its span.
fn found(source: &str, pos: usize) -> (String, Span) {
    let rest = &source[pos..];
    let Some(c) = rest.chars().next() else {
        return (String::from("end of input"), Span::point(pos));
    };
    let run = |keep: fn(char) -> bool| rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
    let len = if is_ident_char(c) {
        run(is_ident_char)
    } else if c == '.' || c == '+' || c == '-' {
        1 + rest[1..]
            .find(|c: char| !(is_ident_char(c) || c == '.'))
            .unwrap_or(rest.len() - 1)
    } else {
        c.len_utf8()
    };
    let text = &rest[..len];
    let shown = if c == '"' || c == '\'' {
        String::from("a string")
    } else if c.is_control() {
        alloc::format!("`\\u{{{:x}}}`", c as u32)
    } else {
        alloc::format!("`{}`", clip(text, 24))
    };
    (shown, Span::new(pos, pos + len))
}

/// The innermost bracket opened before `upto` and not closed (strings skipped).
fn unclosed(source: &str, upto: usize) -> Option<(usize, char)> {
    let bytes = &source.as_bytes()[..upto];
    let mut stack = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b @ (b'(' | b'[' | b'{') => stack.push((i, b as char)),
            b')' | b']' | b'}' => {
                stack.pop();
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack.pop()
}

/// The identifier that ends right before `pos` (whitespace between allowed).
fn word_before(source: &str, pos: usize) -> Option<&str> {
    let before = source[..pos].trim_end_matches(crate::grammar::WHITESPACE);
    let start = before
        .rfind(|c: char| !is_ident_char(c))
        .map_or(0, |i| i + 1);
    let word = &before[start..];
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then_some(word)
}

/// Bare words people write for values the language spells differently.
const BARE_WORDS: &[(&str, &str)] = &[
    ("True", "booleans are written `true` and `false`"),
    ("False", "booleans are written `true` and `false`"),
    ("TRUE", "booleans are written `true` and `false`"),
    ("FALSE", "booleans are written `true` and `false`"),
    ("infinity", "infinity is written `inf` (or `-inf`)"),
    ("Infinity", "infinity is written `inf` (or `-inf`)"),
    ("INF", "infinity is written `inf` (or `-inf`)"),
    ("nan", "NaN is not a valid argument"),
    ("NaN", "NaN is not a valid argument"),
    (
        "null",
        "there is no null: leave the argument out to get its default",
    ),
    (
        "None",
        "there is no null: leave the argument out to get its default",
    ),
];

fn hint(source: &str, pos: usize, positives: &[Rule]) -> Option<String> {
    let has = |r: Rule| positives.contains(&r);
    let next = source[pos..].chars().next();
    let prev = source[..pos].chars().next_back();
    let Some(c) = next else {
        if has(Rule::stage) || has(Rule::stage_name) {
            return Some(String::from(
                "remove the trailing `|`, or add a stage after it",
            ));
        }
        let (at, open) = unclosed(source, pos)?;
        let (line, column) = line_column(source, at);
        let close = match open {
            '(' => ')',
            '[' => ']',
            _ => '}',
        };
        return Some(alloc::format!(
            "the `{open}` at line {line}, column {column} is not closed: add `{close}`"
        ));
    };
    if c == '-' && prev.is_some_and(is_ident_char) {
        let start = source[..pos]
            .rfind(|c: char| !is_ident_char(c))
            .map_or(0, |i| i + 1);
        let end = source[pos..]
            .find(|c: char| !(is_ident_char(c) || c == '-'))
            .map_or(source.len(), |i| pos + i);
        let fixed = source[start..end].replace('-', "_");
        return Some(alloc::format!(
            "names use `_`, not `-`: write `{}`",
            clip(&fixed, 32)
        ));
    }
    if (c == ',' || c == ';') && has(Rule::bar) {
        return Some(String::from("separate stages with `|`"));
    }
    if (has(Rule::stage) || has(Rule::stage_name)) && c == '|' {
        return Some(String::from("each `|` must stand between two stages"));
    }
    let value_expected = positives.iter().any(|&r| expected_word(r).0 == 2);
    if value_expected && (c.is_ascii_alphabetic() || c == '_') {
        let end = source[pos..]
            .find(|c: char| !is_ident_char(c))
            .map_or(source.len(), |i| pos + i);
        let word = &source[pos..end];
        return Some(match BARE_WORDS.iter().find(|(w, _)| *w == word) {
            Some(&(_, meant)) => String::from(meant),
            None => alloc::format!("strings are quoted: \"{}\"", clip(word, 24)),
        });
    }
    if has(Rule::open)
        && (c.is_ascii_digit() || matches!(c, '"' | '\'' | '[' | '{' | '.' | '-' | '+'))
    {
        let name = word_before(source, pos)?;
        return Some(alloc::format!(
            "arguments go in parentheses: `{}(…)`",
            clip(name, 24)
        ));
    }
    None
}

/// `temp(nan)`, `grammar(json)`: a word where a value belongs (the parser read it as a
/// parameter name and then missed the `=`).
fn bare_word(source: &str, pos: usize, positives: &[Rule]) -> Option<Diagnostic> {
    if positives != [Rule::equals]
        || !matches!(source[pos..].chars().next(), None | Some(')' | ','))
    {
        return None;
    }
    let word = word_before(source, pos)?;
    let end = source[..pos]
        .trim_end_matches(crate::grammar::WHITESPACE)
        .len();
    let span = Span::new(end - word.len(), end);
    let help = match BARE_WORDS.iter().find(|(w, _)| *w == word) {
        Some(&(_, meant)) => String::from(meant),
        None => alloc::format!(
            "write \"{w}\" for a string, or `{w}=…` to give parameter `{w}` a value",
            w = clip(word, 24)
        ),
    };
    Some(
        Diagnostic::new(
            DiagnosticKind::Syntax,
            alloc::format!("`{}` is not a value", clip(word, 24)),
            span,
            source,
        )
        .with_help(help),
    )
}

/// The diagnostic for a pest parse error. `unterminated` is the pre-scan's unclosed string,
/// which explains any error at or after it better than "expected …".
pub(crate) fn translate(e: &Error<Rule>, source: &str, unterminated: Option<Span>) -> Diagnostic {
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((start, _)) => start,
    };
    let pos = Span::point(pos).clamp(source).start;
    if let Some(open) = unterminated.filter(|u| pos >= u.start) {
        let quote = &source[open.start..open.end];
        return Diagnostic::new(DiagnosticKind::Syntax, "unterminated string", open, source)
            .with_help(alloc::format!("close it with a matching `{quote}`"));
    }
    let positives: &[Rule] = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives,
        ErrorVariant::CustomError { .. } => &[],
    };
    if let Some(c) = source[pos..].chars().next().filter(|c| !c.is_ascii()) {
        let span = Span::new(pos, pos + c.len_utf8());
        let prev_ident = source[..pos].chars().next_back().is_some_and(is_ident_char);
        let name_expected = positives.iter().any(|r| {
            matches!(
                r,
                Rule::stage | Rule::stage_name | Rule::arg | Rule::param_name
            )
        });
        let in_name = prev_ident || (c.is_alphabetic() && name_expected);
        return if in_name {
            Diagnostic::new(
                DiagnosticKind::Syntax,
                alloc::format!("non-ASCII character `{c}` in a name"),
                span,
                source,
            )
            .with_help("names use only ASCII letters, digits and `_`")
        } else {
            let d = Diagnostic::new(
                DiagnosticKind::Syntax,
                alloc::format!("unexpected character `{c}` (U+{:04X})", c as u32),
                span,
                source,
            );
            let want = expected(positives);
            if want.is_empty() {
                d
            } else {
                d.with_help(alloc::format!("expected {want}"))
            }
        };
    }
    if let Some(d) = bare_word(source, pos, positives) {
        return d;
    }
    let (what, span) = found(source, pos);
    let want = expected(positives);
    let message = if want.is_empty() {
        alloc::format!("unexpected {what}")
    } else {
        alloc::format!("expected {want}, found {what}")
    };
    let d = Diagnostic::new(DiagnosticKind::Syntax, message, span, source);
    match hint(source, pos, positives) {
        Some(help) => d.with_help(help),
        None => d,
    }
}
