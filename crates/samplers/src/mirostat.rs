//! `mirostat`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `mirostat`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("mirostat", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
