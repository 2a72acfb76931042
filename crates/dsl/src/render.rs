//! The multi-line, caret-underlined form of a [`Diagnostic`].

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::diagnostic::Diagnostic;
use crate::span::line_column;

/// Lines longer than this many characters are shown as a window around the span.
const WINDOW: usize = 100;
/// How many characters of context the window keeps before the span.
const CONTEXT_BEFORE: usize = 40;
/// A tab is shown as this many spaces.
const TAB_WIDTH: usize = 4;

/// How one source character is shown: tabs as spaces, control characters as their Unicode
/// "control picture" (`␀`), so that the caret line stays aligned and nothing invisible or
/// terminal-controlling is printed.
fn shown(c: char, out: &mut String) -> usize {
    match c {
        '\t' => {
            out.extend(core::iter::repeat_n(' ', TAB_WIDTH));
            TAB_WIDTH
        }
        '\u{0}'..='\u{1f}' => {
            out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'));
            1
        }
        '\u{7f}' => {
            out.push('\u{2421}');
            1
        }
        c if c.is_control() => {
            out.push('\u{fffd}');
            1
        }
        c => {
            out.push(c);
            1
        }
    }
}

impl Diagnostic {
    /// Multi-line rendering with the source line and a caret (`^^^`) under the span:
    ///
    /// ```text
    /// error: unknown stage `top_q`
    ///  --> line 1, column 13
    ///   |
    /// 1 | temp(0.7) | top_q(0.9)
    ///   |             ^^^^^
    ///   = help: did you mean `top_p`?
    /// ```
    ///
    /// `source` should be the text the diagnostic was made for. Tabs and control characters
    /// are shown so that the caret stays aligned, and a very long line is cut to a window
    /// around the span.
    pub fn render(&self, source: &str) -> String {
        render(self, source)
    }
}

/// See [`Diagnostic::render`].
pub(crate) fn render(d: &Diagnostic, source: &str) -> String {
    let span = d.span.clamp(source);
    let (line_no, column) = line_column(source, span.start);
    let line_start = source[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[line_start..]
        .find('\n')
        .map_or(source.len(), |i| line_start + i);
    let line = &source[line_start..line_end];
    let line = line.strip_suffix('\r').unwrap_or(line);

    // Character indices of the underlined part of this line.
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let first = chars.partition_point(|&(i, _)| line_start + i < span.start);
    let last = chars
        .partition_point(|&(i, _)| line_start + i < span.end)
        .max(first);

    let (from, to) = if chars.len() <= WINDOW {
        (0, chars.len())
    } else {
        let from = first
            .saturating_sub(CONTEXT_BEFORE)
            .min(chars.len() - WINDOW.min(chars.len()));
        (from, (from + WINDOW).min(chars.len()))
    };

    let mut text = String::new();
    let mut pad = 0;
    let mut width = 0;
    if from > 0 {
        text.push('…');
        pad += 1;
    }
    for (k, &(_, c)) in chars[from..to].iter().enumerate() {
        let w = shown(c, &mut text);
        let k = from + k;
        if k < first {
            pad += w;
        } else if k < last {
            width += w;
        }
    }
    if to < chars.len() {
        text.push('…');
    }
    let width = width.max(1);

    let gutter = digits(line_no);
    let blank = " ".repeat(gutter);
    let mut out = String::new();
    let _ = writeln!(out, "error: {}", d.message);
    let _ = writeln!(out, "{blank}--> line {line_no}, column {column}");
    let _ = writeln!(out, "{blank} |");
    let source_line = alloc::format!("{line_no} | {text}");
    let _ = writeln!(out, "{}", source_line.trim_end());
    let _ = writeln!(out, "{blank} | {}{}", " ".repeat(pad), "^".repeat(width));
    if let Some(help) = &d.help {
        let _ = writeln!(out, "{blank} = help: {help}");
    }
    out
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DiagnosticKind, Span};

    fn diag(src: &str, span: Span) -> Diagnostic {
        Diagnostic::new(DiagnosticKind::Syntax, "boom", span, src).with_help("fix it")
    }

    #[test]
    fn caret_sits_under_the_span() {
        let src = "temp(0.7) | top_q(0.9)";
        let out = diag(src, Span::new(12, 17)).render(src);
        let expected = "error: boom\n --> line 1, column 13\n  |\n1 | temp(0.7) | top_q(0.9)\n  |             ^^^^^\n  = help: fix it\n";
        assert_eq!(out, expected);
    }

    #[test]
    fn tabs_and_control_characters_keep_alignment() {
        let src = "\ta\0b";
        let out = diag(src, Span::new(3, 4)).render(src);
        assert!(out.contains("1 |     a\u{2400}b\n"), "{out}");
        assert!(out.contains("  |       ^\n"), "{out}");
    }

    #[test]
    fn later_lines_and_wide_gutters() {
        let src = "a\n".repeat(11) + "  bad";
        let at = src.len() - 3;
        let out = diag(&src, Span::new(at, at + 3)).render(&src);
        assert!(out.contains("  --> line 12, column 3\n"), "{out}");
        assert!(out.contains("12 |   bad\n   |   ^^^\n"), "{out}");
    }

    #[test]
    fn long_lines_are_windowed() {
        let src = "x".repeat(10_000) + "BAD" + &"y".repeat(10_000);
        let out = diag(&src, Span::new(10_000, 10_003)).render(&src);
        let shown_line = out.lines().nth(3).unwrap();
        assert!(shown_line.chars().count() < 120, "{shown_line}");
        assert!(shown_line.starts_with("1 | …xxx"), "{shown_line}");
        assert!(
            shown_line.contains("xxxxBADyyyy") && shown_line.ends_with("y…"),
            "{shown_line}"
        );
        let caret_line = out.lines().nth(4).unwrap();
        let caret_col = caret_line.find('^').unwrap();
        assert_eq!(shown_line.chars().nth(caret_col).unwrap(), 'B');
        assert!(caret_line.ends_with("^^^"));
    }

    #[test]
    fn end_of_input_gets_one_caret() {
        let src = "top_k(";
        let out = diag(src, Span::point(6)).render(src);
        assert!(out.contains("1 | top_k(\n  |       ^\n"), "{out}");
    }
}
