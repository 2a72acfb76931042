//! `dist`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `dist`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("dist", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
