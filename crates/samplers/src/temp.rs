//! `temp`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `temp`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("temp", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
