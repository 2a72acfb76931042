//! Byte spans in the pipeline text and their line/column.

use alloc::string::String;
use alloc::vec::Vec;

/// A byte range `start..end` in the pipeline text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte (equal to `start` for a position such as the end of input).
    pub end: usize,
}

impl Span {
    /// The span `start..end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The empty span at `at`.
    pub const fn point(at: usize) -> Self {
        Span { start: at, end: at }
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no byte.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The span clamped into `source` and onto character boundaries, so that slicing with it
    /// never panics.
    pub(crate) fn clamp(self, source: &str) -> Span {
        let fix = |mut i: usize| {
            i = i.min(source.len());
            while !source.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let start = fix(self.start);
        Span {
            start,
            end: fix(self.end).max(start),
        }
    }
}

impl From<pest::Span<'_>> for Span {
    fn from(span: pest::Span<'_>) -> Self {
        Span {
            start: span.start(),
            end: span.end(),
        }
    }
}

/// The 1-based line and 1-based column (in characters) of byte `offset` in `source`.
/// An offset past the end, or inside a character, counts as the nearest boundary before it.
pub(crate) fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = Span::point(offset).clamp(source).start;
    let before = &source[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_and_lines_count_newlines() {
        let src = "top_k(40)\n  | tämp(0.7) | x";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 6), (1, 7));
        assert_eq!(line_column(src, 10), (2, 1));
        let x = src.rfind('x').unwrap();
        // `ä` is two bytes but one column.
        assert_eq!(line_column(src, x), (2, 17));
        assert_eq!(line_column(src, src.len()), (2, 18));
        assert_eq!(line_column(src, src.len() + 10), (2, 18));
    }

    #[test]
    fn clamp_lands_on_char_boundaries() {
        let src = "aé";
        assert_eq!(Span::new(2, 9).clamp(src), Span::new(1, 3));
        assert_eq!(Span::new(5, 2).clamp(src), Span::new(3, 3));
        assert_eq!(line_column(src, 2), (1, 2));
    }
}

/// Where each stage and each given argument of a validated pipeline was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StageSpans {
    /// The stage (for an appended `dist`: the point after the last stage).
    pub stage: Span,
    /// Each argument given in the text, by parameter name: the span of `name=value` or of the
    /// positional value.
    pub args: Vec<(String, Span)>,
    /// Whether the stage was appended, not written.
    pub appended: bool,
}

impl StageSpans {
    /// The span of argument `param` when it was written, else of the stage.
    pub fn of(&self, param: &str) -> Span {
        self.args
            .iter()
            .find(|(n, _)| n == param)
            .map_or(self.stage, |(_, s)| *s)
    }
}
