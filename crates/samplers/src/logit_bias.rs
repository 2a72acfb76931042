//! `logit_bias`: not written yet (being written in this change).

use sieve_core::{StageEntry, StageInfo};

/// Registry entry for `logit_bias`.
pub fn entry() -> StageEntry {
    StageEntry::new(StageInfo::builtin("logit_bias", "", alloc::vec![]), |args, _| Err(args.invalid("", "not written yet")))
}
