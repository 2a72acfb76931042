//! `xtc`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `xtc`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("xtc", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
