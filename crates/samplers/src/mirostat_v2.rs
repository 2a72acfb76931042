//! `mirostat_v2`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `mirostat_v2`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("mirostat_v2", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
