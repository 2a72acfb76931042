//! Stop strings on streamed text: finding a complete one, and how much of the text's end
//! must be held back because it may still become one.
//!
//! Semantics (see `reference/semantics.md` §5 and llama.cpp's `find_partial_stop_string`):
//! - a stop string matches anywhere in the generated text, not only at token boundaries;
//! - when several could match, the one that *ends* first wins (ties: the longer one), which
//!   is the one a token-by-token stream completes first, so the result does not depend on
//!   how the text is cut into tokens;
//! - the text is cut where the stop string starts; neither it nor anything after it is
//!   emitted;
//! - while the text ends with a proper prefix of some stop string, the longest such suffix is
//!   held back (only that much, not a fixed `max_len − 1` buffer as vLLM does).

use crate::{Error, Result};

/// The stop strings of one generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopStrings {
    stops: Vec<String>,
}

/// A complete stop string found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopMatch {
    /// Byte offset where the stop string starts (the text is cut here).
    pub start: usize,
    /// Byte offset just after it.
    pub end: usize,
    /// Which stop string (index in the list given).
    pub index: usize,
}

impl StopStrings {
    /// The stop strings `stops`.
    ///
    /// # Errors
    /// [`Error::EmptyStop`] if one is empty (it would match before any text).
    pub fn new(stops: &[String]) -> Result<Self> {
        if stops.iter().any(String::is_empty) {
            return Err(Error::EmptyStop);
        }
        Ok(StopStrings {
            stops: stops.to_vec(),
        })
    }

    /// Whether there is no stop string.
    pub fn is_empty(&self) -> bool {
        self.stops.is_empty()
    }

    /// The stop string that ends first in `text` (ties: the one that starts first).
    pub fn find(&self, text: &str) -> Option<StopMatch> {
        self.stops
            .iter()
            .enumerate()
            .filter_map(|(index, s)| {
                text.find(s.as_str()).map(|start| StopMatch {
                    start,
                    end: start + s.len(),
                    index,
                })
            })
            .min_by_key(|m| (m.end, m.start))
    }

    /// The length in bytes of the longest suffix of `text` that is a proper prefix of a stop
    /// string (0 when none is): the text that must not be emitted yet.
    pub fn partial_len(&self, text: &str) -> usize {
        let mut best = 0;
        for s in &self.stops {
            let longest = (s.len() - 1).min(text.len());
            for k in (best + 1..=longest).rev() {
                if s.is_char_boundary(k) && text.ends_with(&s[..k]) {
                    best = k;
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(list: &[&str]) -> StopStrings {
        StopStrings::new(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn the_earliest_ending_match_wins() {
        let s = stops(&["bcd", "c"]);
        assert_eq!(
            s.find("abcd"),
            Some(StopMatch {
                start: 2,
                end: 3,
                index: 1
            })
        );
        let s = stops(&["cd", "bcd"]);
        // Both end at 4: the longer one (starting first) wins.
        assert_eq!(
            s.find("abcd"),
            Some(StopMatch {
                start: 1,
                end: 4,
                index: 1
            })
        );
        assert_eq!(s.find("abc"), None);
    }

    #[test]
    fn holds_back_the_longest_proper_prefix_suffix() {
        let s = stops(&["</s>", "ab"]);
        assert_eq!(s.partial_len("hello </"), 2);
        assert_eq!(s.partial_len("hello <"), 1);
        assert_eq!(s.partial_len("hello a"), 1);
        assert_eq!(s.partial_len("hello"), 0);
        // A complete stop string is not a *proper* prefix.
        assert_eq!(stops(&["ab"]).partial_len("xab"), 0);
        assert_eq!(s.partial_len(""), 0);
    }

    #[test]
    fn prefixes_only_count_on_character_boundaries() {
        let s = stops(&["é!"]);
        assert_eq!(s.partial_len("café"), 2);
        assert_eq!(s.partial_len("caf"), 0);
    }

    #[test]
    fn empty_stop_strings_are_rejected() {
        assert!(matches!(
            StopStrings::new(&[String::new()]),
            Err(Error::EmptyStop)
        ));
    }
}
