//! A linear pre-scan of the pipeline text, run before the parser, that finds what the
//! recursive-descent parser cannot report well or safely: brackets nested deeper than
//! [`MAX_NESTING`] (which would exhaust the parser's stack) and a string literal that is never
//! closed.

use crate::span::Span;

/// The deepest bracket nesting (`(`, `[`, `{` together) a pipeline may have. Real pipelines
/// use two or three levels; the limit keeps parsing within a small, fixed amount of stack.
pub const MAX_NESTING: usize = 32;

/// What the pre-scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The first opening bracket that exceeds [`MAX_NESTING`].
    pub too_deep: Option<Span>,
    /// The opening quote of a string literal that runs to the end of the input.
    pub unterminated: Option<Span>,
}

/// Scans `source` once, treating quoted text (with backslash escapes) the way the grammar
/// does.
pub(crate) fn scan(source: &str) -> Scan {
    let bytes = source.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Scan {
                        too_deep: Some(Span::new(i, i + 1)),
                        unterminated: None,
                    };
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            quote @ (b'"' | b'\'') => {
                let open = i;
                i += 1;
                loop {
                    match bytes.get(i) {
                        None => {
                            return Scan {
                                too_deep: None,
                                unterminated: Some(Span::new(open, open + 1)),
                            }
                        }
                        Some(b'\\') => i += 2,
                        Some(&b) if b == quote => break,
                        Some(_) => i += 1,
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    Scan::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn finds_the_first_bracket_past_the_limit() {
        let src: String = "[".repeat(MAX_NESTING + 5);
        assert_eq!(
            scan(&src).too_deep,
            Some(Span::new(MAX_NESTING, MAX_NESTING + 1))
        );
        let ok = "(".repeat(MAX_NESTING) + &")".repeat(MAX_NESTING);
        assert_eq!(scan(&ok), Scan::default());
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let src = alloc::format!("x(\"{}\")", "[".repeat(1000));
        assert_eq!(scan(&src), Scan::default());
    }

    #[test]
    fn finds_unterminated_strings_with_escapes() {
        assert_eq!(scan(r#"a("b\")"#).unterminated, Some(Span::new(2, 3)));
        assert_eq!(scan(r#"a('b\\') | c("\"")"#), Scan::default());
        assert_eq!(scan(r#"a("\"#).unterminated, Some(Span::new(2, 3)));
    }
}
