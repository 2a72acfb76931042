//! `no_repeat_ngram`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `no_repeat_ngram`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("no_repeat_ngram", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
