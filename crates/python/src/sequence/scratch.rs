//! The candidates a step works in: one set per thread, not one per sequence. A step loads
//! them from its row and is done with them before it returns, so sequences stepped on one
//! thread can share them; a batch of many rows then keeps one vocabulary-sized buffer per
//! thread warm in cache instead of one per sequence in memory.

use std::cell::Cell;

use sieve_core::Candidates;

thread_local! {
    static SCRATCH: Cell<Candidates> = Cell::new(Candidates::new());
}

/// Runs `f` on this thread's candidates, taken out for the call and put back after it (a
/// nested call, or one while the thread is torn down, gets fresh ones). What they hold
/// before is of no account: every step loads them first.
pub(super) fn with_candidates<T>(f: impl FnOnce(&mut Candidates) -> T) -> T {
    let mut candidates = SCRATCH.try_with(Cell::take).unwrap_or_default();
    let out = f(&mut candidates);
    let _ = SCRATCH.try_with(|cell| cell.set(candidates));
    out
}
