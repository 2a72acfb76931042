//! Stop strings on streamed text: finding a complete one, and how much of the text's end
//! must be held back because it may still become one.
//!
//! Semantics (see `reference/semantics.md` §5 and llama.cpp's `find_partial_stop_string`):
//! - a stop string matches anywhere in the generated text, not only at token boundaries;
//! - when several could match, the one that *ends* first wins (ties: the longer one, then the
//!   first given), which is the one a token-by-token stream completes first, so the result
//!   does not depend on how the text is cut into tokens;
//! - the text is cut where the stop string starts; neither it nor anything after it is
//!   emitted;
//! - while the text ends with a proper prefix of some stop string, the longest such suffix is
//!   held back (only that much, not a fixed `max_len − 1` buffer as vLLM does).
//!
//! # Matching
//!
//! All the stop strings are compiled into one Aho–Corasick automaton (Aho & Corasick 1975,
//! the `aho-corasick` crate's contiguous NFA with standard semantics). Its state after a text
//! is the trie node of the longest suffix of that text which is a prefix of some stop string,
//! so one state carried from token to token ([`StopScan`]) answers both questions: a match
//! state means a stop string has just ended, and a per-state table gives the length to hold
//! back. Each byte of new text costs one automaton step (amortized), whatever the number of
//! stop strings; building costs time linear in their total length.
//!
//! # Limits
//!
//! At most [`MAX_STOP_STRINGS`] stop strings of at most [`MAX_STOP_BYTES`] bytes each, none
//! empty: [`StopStrings::new`] refuses anything else. The automaton then has at most
//! 16 × 256 + 1 = 4097 states, and at most 255 bytes of text are ever held back.

use std::collections::HashMap;
use std::sync::Arc;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

use crate::{Error, Result};

/// The most stop strings one generation may have: 16.
///
/// OpenAI's API allows 4 and Hugging Face TGI defaults to 4 (`--max-stop-sequences`); vLLM
/// and llama.cpp set no limit. 16 leaves room for a chat template's end markers on top of a
/// client's own 4, while keeping the automaton small (see [`MAX_STOP_BYTES`]). Matching cost
/// does not grow with the count; the limit bounds memory and the work of building.
pub const MAX_STOP_STRINGS: usize = 16;

/// The longest stop string, in UTF-8 bytes: 256.
///
/// Ample for any end marker or sentence a client stops at, and the bound on how much text a
/// stream may hold back (at most 255 bytes) while it could still become a stop string.
pub const MAX_STOP_BYTES: usize = 256;

/// The most characters of an offending stop string an error message quotes.
const PREVIEW_CHARS: usize = 60;

/// Stop strings over the limits of [`StopStrings::new`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopLimit {
    /// More than [`MAX_STOP_STRINGS`] stop strings.
    #[error("{count} stop strings exceed the limit of {MAX_STOP_STRINGS}")]
    TooMany {
        /// How many were given.
        count: usize,
    },
    /// A stop string longer than [`MAX_STOP_BYTES`].
    #[error(
        "stop string {index} ({preview}) is {len} bytes long, over the limit of \
         {MAX_STOP_BYTES} bytes"
    )]
    TooLong {
        /// Its index in the list given.
        index: usize,
        /// Its length in bytes.
        len: usize,
        /// Its beginning, quoted and escaped, at most about 60 characters.
        preview: String,
    },
}

/// The stop strings of one generation.
#[derive(Debug, Clone, Default)]
pub struct StopStrings {
    stops: Vec<String>,
    /// `None` when there is no stop string.
    matcher: Option<Arc<Matcher>>,
}

impl PartialEq for StopStrings {
    fn eq(&self, other: &Self) -> bool {
        self.stops == other.stops
    }
}

impl Eq for StopStrings {}

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

/// Where a stream of text stands against the stop strings: what [`StopStrings::scan`]
/// carries from one chunk to the next. The default is the start of a text.
///
/// A scan belongs to the [`StopStrings`] that advanced it; giving it to others is a logic
/// error (the results are meaningless, or it panics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopScan {
    /// The automaton's state; `None` at the start.
    state: Option<StateID>,
}

/// What [`StopStrings::scan`] found in a chunk of streamed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanned {
    /// A stop string ended in the chunk (the first to end: see the [module](self) docs). It
    /// may have started in earlier chunks, but never before the text they left held back.
    Stop {
        /// Which stop string (index in the list given).
        index: usize,
        /// Byte offset in the chunk just after it.
        end: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// No stop string ended: the last `held` bytes of the text so far (this chunk and the
    /// ones before it) are a proper prefix of one and must not be emitted yet.
    Partial {
        /// Bytes to hold back (at most [`MAX_STOP_BYTES`] − 1).
        held: usize,
    },
}

/// The automaton of a non-empty list of stop strings.
#[derive(Debug)]
struct Matcher {
    nfa: NFA,
    start: StateID,
    /// For each state but the start: the length of the longest suffix of its text that is a
    /// proper prefix of a stop string (its depth, unless it is a leaf: a whole stop string
    /// that begins no longer one).
    held: HashMap<StateID, usize>,
}

impl Matcher {
    fn new(stops: &[String]) -> Option<Matcher> {
        let nfa = NFA::builder()
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(stops)
            .ok()?;
        let start = nfa.start_state(Anchored::No).ok()?;
        let mut matcher = Matcher {
            nfa,
            start,
            held: HashMap::new(),
        };
        // The state after a stop string's first k bytes is the trie node of exactly those
        // bytes (they are their own longest suffix that begins a stop string), so walking
        // every stop string names every node with its depth. Nodes reached before a string's
        // end begin a longer text: they are held back whole.
        let mut leaves = Vec::new();
        for stop in stops {
            let bytes = stop.as_bytes();
            let mut state = start;
            for (k, &b) in bytes.iter().enumerate() {
                state = matcher.nfa.next_state(Anchored::No, state, b);
                if k + 1 < bytes.len() {
                    matcher.held.insert(state, k + 1);
                }
            }
            leaves.push((bytes, state));
        }
        // A node that is only ever a whole stop string (a leaf) holds back what its failure
        // state does: the state after the string without its first byte, a shorter node
        // whose own entry is set (shortest leaves first).
        leaves.retain(|(_, state)| !matcher.held.contains_key(state));
        leaves.sort_by_key(|(bytes, _)| bytes.len());
        for (bytes, state) in leaves {
            let fail = matcher.walk(start, &bytes[1..]);
            let held = matcher.held_at(fail);
            matcher.held.insert(state, held);
        }
        Some(matcher)
    }

    /// The state after `bytes` from `state`, matches or not.
    fn walk(&self, mut state: StateID, bytes: &[u8]) -> StateID {
        for &b in bytes {
            state = self.nfa.next_state(Anchored::No, state, b);
        }
        state
    }

    fn held_at(&self, state: StateID) -> usize {
        self.held.get(&state).copied().unwrap_or(0)
    }

    /// Advances `state` over `bytes` up to the first match state; returns the match (its
    /// end in `bytes`, index, length) or, when none, the hold-back after all of `bytes`.
    fn scan(&self, state: &mut StateID, bytes: &[u8]) -> Scanned {
        for (i, &b) in bytes.iter().enumerate() {
            *state = self.nfa.next_state(Anchored::No, *state, b);
            if self.nfa.is_match(*state) {
                // Every stop string ending here is a suffix of this state's text, so it is
                // among the state's matches: the longest wins, then the first given.
                let (index, len) = (0..self.nfa.match_len(*state))
                    .map(|m| {
                        let pattern = self.nfa.match_pattern(*state, m);
                        (pattern.as_usize(), self.nfa.pattern_len(pattern))
                    })
                    .min_by_key(|&(index, len)| (std::cmp::Reverse(len), index))
                    .expect("a match state has a match");
                return Scanned::Stop {
                    index,
                    end: i + 1,
                    len,
                };
            }
        }
        Scanned::Partial {
            held: self.held_at(*state),
        }
    }
}

/// `s` quoted and escaped, cut to about [`PREVIEW_CHARS`] characters with an ellipsis.
fn preview(s: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = 0;
    for c in s.chars() {
        let escaped = c.escape_debug();
        chars += escaped.len();
        if chars > PREVIEW_CHARS {
            out.push('…');
            break;
        }
        out.extend(escaped);
    }
    out.push('"');
    out
}

impl StopStrings {
    /// The stop strings `stops`.
    ///
    /// # Errors
    /// - [`StopLimit::TooMany`] (as [`Error::StopLimit`]) for more than
    ///   [`MAX_STOP_STRINGS`];
    /// - [`Error::EmptyStop`] if one is empty (it would match before any text);
    /// - [`StopLimit::TooLong`] for one longer than [`MAX_STOP_BYTES`] bytes.
    pub fn new(stops: &[String]) -> Result<Self> {
        if stops.len() > MAX_STOP_STRINGS {
            return Err(StopLimit::TooMany { count: stops.len() }.into());
        }
        for (index, stop) in stops.iter().enumerate() {
            if stop.is_empty() {
                return Err(Error::EmptyStop);
            }
            if stop.len() > MAX_STOP_BYTES {
                return Err(StopLimit::TooLong {
                    index,
                    len: stop.len(),
                    preview: preview(stop),
                }
                .into());
            }
        }
        let matcher = if stops.is_empty() {
            None
        } else {
            // Within the limits the automaton's sizes are far from the crate's bounds.
            Some(Arc::new(
                Matcher::new(stops).expect("stop strings within the limits build"),
            ))
        };
        Ok(StopStrings {
            stops: stops.to_vec(),
            matcher,
        })
    }

    /// Whether there is no stop string.
    pub fn is_empty(&self) -> bool {
        self.stops.is_empty()
    }

    /// The stop strings, in the order given.
    pub fn strings(&self) -> &[String] {
        &self.stops
    }

    /// Advances `scan` over `chunk`, the next piece of a streamed text, and says whether a
    /// stop string ended in it or else how much of the text's end to hold back (the same
    /// answers as [`find`](Self::find) and [`partial_len`](Self::partial_len) on the text
    /// held back before plus `chunk`, in time linear in `chunk` alone). After a stop the
    /// scan starts afresh, as for a new text.
    pub fn scan(&self, scan: &mut StopScan, chunk: &str) -> Scanned {
        let Some(matcher) = &self.matcher else {
            return Scanned::Partial { held: 0 };
        };
        let mut state = scan.state.unwrap_or(matcher.start);
        let scanned = matcher.scan(&mut state, chunk.as_bytes());
        scan.state = match scanned {
            Scanned::Stop { .. } => None,
            Scanned::Partial { .. } => Some(state),
        };
        scanned
    }

    /// The stop string that ends first in `text` (ties: the one that starts first, then the
    /// first given).
    pub fn find(&self, text: &str) -> Option<StopMatch> {
        match self.scan(&mut StopScan::default(), text) {
            Scanned::Stop { index, end, len } => Some(StopMatch {
                start: end - len,
                end,
                index,
            }),
            Scanned::Partial { .. } => None,
        }
    }

    /// The length in bytes of the longest suffix of `text` that is a proper prefix of a stop
    /// string (0 when none is): the text that must not be emitted yet.
    pub fn partial_len(&self, text: &str) -> usize {
        // Bytes suffice: a suffix of valid UTF-8 equal to a stop string's first bytes starts
        // on a character boundary, so those bytes end on one of the stop string's.
        self.matcher
            .as_ref()
            .map_or(0, |m| m.held_at(m.walk(m.start, text.as_bytes())))
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

    #[test]
    fn identical_stop_strings_report_the_first_given() {
        let s = stops(&["x", "ab", "ab"]);
        assert_eq!(
            s.find("zab"),
            Some(StopMatch {
                start: 1,
                end: 3,
                index: 1
            })
        );
    }

    #[test]
    fn a_whole_stop_string_holds_back_what_its_suffixes_begin() {
        // "abc" is whole (not held), but its suffix "bc" begins "bcd".
        let s = stops(&["abc", "bcd"]);
        assert_eq!(s.partial_len("xabc"), 2);
        // "aa" whole; its suffix "a" begins "ab"; the chain goes through another whole one.
        let s = stops(&["ab", "aa", "baa"]);
        assert_eq!(s.partial_len("baa"), 1);
        assert_eq!(s.partial_len("ba"), 2);
    }

    #[test]
    fn a_scan_carries_the_state_across_chunks() {
        let s = stops(&["</s>", "ab"]);
        let mut scan = StopScan::default();
        assert_eq!(s.scan(&mut scan, "hi <"), Scanned::Partial { held: 1 });
        assert_eq!(s.scan(&mut scan, "/"), Scanned::Partial { held: 2 });
        assert_eq!(
            s.scan(&mut scan, "s>!"),
            Scanned::Stop {
                index: 0,
                end: 2,
                len: 4
            }
        );
        // After a stop the scan starts afresh: "s>" alone is nothing.
        assert_eq!(s.scan(&mut scan, "s>"), Scanned::Partial { held: 0 });
        let none = StopStrings::default();
        assert_eq!(none.scan(&mut scan, "ab"), Scanned::Partial { held: 0 });
    }

    #[test]
    fn at_most_the_limit_of_stop_strings() {
        let at_limit: Vec<String> = (0..MAX_STOP_STRINGS).map(|i| format!("s{i}")).collect();
        assert!(StopStrings::new(&at_limit).is_ok());
        let over: Vec<String> = (0..=MAX_STOP_STRINGS).map(|i| format!("s{i}")).collect();
        let e = StopStrings::new(&over).unwrap_err();
        assert!(matches!(
            e,
            Error::StopLimit(StopLimit::TooMany { count: 17 })
        ));
        assert_eq!(e.to_string(), "17 stop strings exceed the limit of 16");
    }

    #[test]
    fn at_most_the_limit_of_bytes_each_and_long_ones_are_not_echoed() {
        let mut list = vec!["ok".to_string(), "é".repeat(MAX_STOP_BYTES / 2)];
        assert!(StopStrings::new(&list).is_ok());
        list[1].push('x');
        let e = StopStrings::new(&list).unwrap_err();
        let message = e.to_string();
        assert!(matches!(
            e,
            Error::StopLimit(StopLimit::TooLong {
                index: 1,
                len: 257,
                ..
            })
        ));
        assert!(message.starts_with("stop string 1 (\"éé"), "{message}");
        assert!(
            message.ends_with("…\") is 257 bytes long, over the limit of 256 bytes"),
            "{message}"
        );
        assert!(message.chars().count() < 130, "{message}");
        // Escapes count towards the preview's length.
        let long = "\u{1b}".repeat(300);
        let e = StopStrings::new(&[long]).unwrap_err().to_string();
        assert!(e.contains("\\u{1b}"), "{e}");
        assert!(e.chars().count() < 130, "{e}");
    }

    #[test]
    fn an_empty_string_is_refused_wherever_it_is() {
        let list = vec!["a".to_string(), String::new()];
        assert!(matches!(StopStrings::new(&list), Err(Error::EmptyStop)));
    }
}
