//! Number and string literals: from their source text to a [`Value`], with a diagnostic at
//! the exact place when the text means nothing.

use alloc::string::String;

use sieve_core::Value;

use crate::diagnostic::{clip, Diagnostic, DiagnosticKind};
use crate::span::Span;

const NUMBER_HELP: &str =
    "numbers are written like `40`, `-3`, `0.9`, `.5`, `1e-5`, `2.5E3` or `-inf`";
const ESCAPE_HELP: &str =
    "valid escapes are \\\" \\' \\\\ \\n \\t \\r \\0 and \\u{…} (1 to 6 hex digits)";

/// Whether `body` (a number without its sign) is `digits [. digits] [e|E [+|-] digits]` with at
/// least one digit before the exponent.
fn is_decimal(body: &str) -> bool {
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// A number token: `40`, `-3`, `+0.5`, `.5`, `5.`, `1e-5`, `2.5E3`, `inf`, `-inf`.
///
/// Digits alone make an integer, which must fit in `i64` (a 40-digit integer is an error, not
/// a float); anything with `.` or an exponent is a float, which must be finite (`1e999` is an
/// error: write `inf`). Underflow to zero or to a subnormal is accepted.
pub(crate) fn number(text: &str, span: Span, source: &str) -> Result<Value, Diagnostic> {
    let negative = text.starts_with('-');
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    if body == "inf" {
        return Ok(Value::Float(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    let err = |message: String, help: &str| {
        Diagnostic::new(DiagnosticKind::InvalidLiteral, message, span, source).with_help(help)
    };
    if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<i64>().map(Value::Int).map_err(|_| {
            err(
                alloc::format!("integer literal `{}` out of range", clip(text, 32)),
                "integers must lie in [-9223372036854775808, 9223372036854775807]",
            )
        });
    }
    if !is_decimal(body) {
        return Err(err(
            alloc::format!("invalid number `{}`", clip(text, 32)),
            NUMBER_HELP,
        ));
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Value::Float(x)),
        Ok(_) => Err(err(
            alloc::format!("float literal `{}` out of range", clip(text, 32)),
            "the largest finite float is about 1.8e308; write `inf` for infinity",
        )),
        Err(_) => Err(err(
            alloc::format!("invalid number `{}`", clip(text, 32)),
            NUMBER_HELP,
        )),
    }
}

/// A string token, quotes included (`"a\n"` or `'a\n'`), starting at byte `start` of
/// `source`: its text with escapes resolved.
pub(crate) fn string(text: &str, start: usize, source: &str) -> Result<String, Diagnostic> {
    let inner = &text[1..text.len() - 1];
    let base = start + 1;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        // The grammar guarantees a character after every backslash.
        let (j, e) = chars.next().unwrap_or((i + 1, '\\'));
        let escape_end = base + j + e.len_utf8();
        let resolved = match e {
            '"' => '"',
            '\'' => '\'',
            '\\' => '\\',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'u' => unicode_escape(&mut chars, base + i, escape_end, source)?,
            other => {
                let shown = if other.is_control() {
                    alloc::format!("\\u{{{:x}}}", other as u32)
                } else {
                    other.into()
                };
                return Err(Diagnostic::new(
                    DiagnosticKind::InvalidLiteral,
                    alloc::format!("unknown escape `\\{shown}`"),
                    Span::new(base + i, escape_end),
                    source,
                )
                .with_help(ESCAPE_HELP));
            }
        };
        out.push(resolved);
    }
    Ok(out)
}

/// The rest of a `\u{…}` escape whose `\u` starts at byte `at` (and ends at `after_u`).
fn unicode_escape(
    chars: &mut core::iter::Peekable<core::str::CharIndices<'_>>,
    at: usize,
    after_u: usize,
    source: &str,
) -> Result<char, Diagnostic> {
    let mut end = after_u;
    let fail = |end: usize, message: &str| {
        Diagnostic::new(
            DiagnosticKind::InvalidLiteral,
            message,
            Span::new(at, end),
            source,
        )
        .with_help(ESCAPE_HELP)
    };
    match chars.peek() {
        Some(&(_, '{')) => {
            chars.next();
            end += 1;
        }
        _ => {
            return Err(fail(
                end,
                "invalid unicode escape: expected `{` after `\\u`",
            ))
        }
    }
    let mut code: u32 = 0;
    let mut digits = 0;
    loop {
        match chars.peek().copied() {
            Some((_, '}')) => {
                chars.next();
                end += 1;
                break;
            }
            Some((_, c)) if c.is_ascii_hexdigit() && digits < 6 => {
                chars.next();
                end += 1;
                digits += 1;
                code = code * 16 + c.to_digit(16).unwrap_or(0);
            }
            Some((_, c)) if c.is_ascii_hexdigit() => {
                return Err(fail(
                    end + 1,
                    "invalid unicode escape: more than 6 hex digits",
                ));
            }
            Some((_, c)) => {
                return Err(fail(
                    end + c.len_utf8(),
                    "invalid unicode escape: expected a hex digit or `}`",
                ));
            }
            None => {
                return Err(fail(
                    end,
                    "invalid unicode escape: expected a hex digit or `}`",
                ))
            }
        }
    }
    if digits == 0 {
        return Err(fail(end, "invalid unicode escape: no hex digits"));
    }
    char::from_u32(code).ok_or_else(|| {
        fail(
            end,
            &alloc::format!("invalid unicode escape: {code:#x} is not a Unicode scalar value"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn num(text: &str) -> Result<Value, Diagnostic> {
        number(text, Span::new(0, text.len()), text)
    }

    fn s(text: &str) -> Result<String, Diagnostic> {
        string(text, 0, text)
    }

    #[test]
    fn integers_and_floats() {
        assert_eq!(num("40"), Ok(Value::Int(40)));
        assert_eq!(num("-3"), Ok(Value::Int(-3)));
        assert_eq!(num("+7"), Ok(Value::Int(7)));
        assert_eq!(num("-9223372036854775808"), Ok(Value::Int(i64::MIN)));
        assert_eq!(num("0.9"), Ok(Value::Float(0.9)));
        assert_eq!(num(".5"), Ok(Value::Float(0.5)));
        assert_eq!(num("5."), Ok(Value::Float(5.0)));
        assert_eq!(num("1e-5"), Ok(Value::Float(1e-5)));
        assert_eq!(num("2.5E3"), Ok(Value::Float(2500.0)));
        assert_eq!(num("1E+2"), Ok(Value::Float(100.0)));
        assert_eq!(num("inf"), Ok(Value::Float(f64::INFINITY)));
        assert_eq!(num("+inf"), Ok(Value::Float(f64::INFINITY)));
        assert_eq!(num("-inf"), Ok(Value::Float(f64::NEG_INFINITY)));
        assert_eq!(num("1e-400"), Ok(Value::Float(0.0)));
        assert_eq!(num("-0.0").map(|v| v.to_string()), Ok("-0.0".to_string()));
    }

    #[test]
    fn bad_numbers_are_invalid_literals() {
        for text in [
            "1e",
            "1e+",
            "40k",
            "0x10",
            "1.5.3",
            "1e5e5",
            "9223372036854775808",
            "1e999",
            "-1e999",
        ] {
            let err = num(text).unwrap_err();
            assert_eq!(err.kind, DiagnosticKind::InvalidLiteral, "{text}");
            assert_eq!(err.span, Span::new(0, text.len()));
        }
        assert!(num("12345678901234567890123456789012345678901")
            .unwrap_err()
            .message
            .contains("out of range"));
        assert!(num("1e999").unwrap_err().message.contains("out of range"));
    }

    #[test]
    fn escapes() {
        assert_eq!(
            s(r#""a\"b\\c\nd\te\rf\0g""#).unwrap(),
            "a\"b\\c\nd\te\rf\0g"
        );
        assert_eq!(s(r"'it\'s'").unwrap(), "it's");
        assert_eq!(s(r#""\'""#).unwrap(), "'");
        assert_eq!(s(r#""\u{1F600}\u{41}\u{0}""#).unwrap(), "😀A\0");
        assert_eq!(s("\"é\nü\"").unwrap(), "é\nü");
    }

    #[test]
    fn bad_escapes_point_at_themselves() {
        let text = r#""ab\qc""#;
        let err = s(text).unwrap_err();
        assert_eq!(
            (err.span, err.message.as_str()),
            (Span::new(3, 5), "unknown escape `\\q`")
        );
        let text = "\"é\\é\"";
        let err = s(text).unwrap_err();
        assert_eq!(err.span, Span::new(3, 6));
        assert_eq!(err.column, 3);
        for (text, span) in [
            (r#""\u{}""#, Span::new(1, 5)),
            (r#""\u{110000}""#, Span::new(1, 11)),
            (r#""\u{D800}""#, Span::new(1, 9)),
            (r#""\u{1234567}""#, Span::new(1, 11)),
            (r#""\u41""#, Span::new(1, 3)),
            (r#""\u{4g}""#, Span::new(1, 6)),
        ] {
            let err = s(text).unwrap_err();
            assert_eq!(err.span, span, "{text}: {err}");
            assert!(
                err.message.starts_with("invalid unicode escape"),
                "{text}: {err}"
            );
        }
    }
}
