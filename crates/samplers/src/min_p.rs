//! `min_p`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `min_p`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("min_p", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
