//! `typical`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `typical`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("typical", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
