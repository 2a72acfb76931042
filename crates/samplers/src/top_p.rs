//! `top_p`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `top_p`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("top_p", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
