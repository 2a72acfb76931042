//! The worker threads `Batch` steps rows on: one rayon pool per thread count asked for, made
//! on first use and kept for the life of the process, so a step wakes parked threads instead
//! of starting new ones (and each worker keeps its candidates buffer warm between steps).
//!
//! A pool for `n` threads has `n - 1` workers: the calling thread does a share itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// The pools made so far, by the number of threads they serve.
static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();

/// The pool that, with the calling thread, runs `threads` (at least 2) shares at once; `None`
/// when the system refuses to start its threads (the caller then runs everything itself).
pub fn for_threads(threads: usize) -> Option<Arc<ThreadPool>> {
    let pools = POOLS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut pools = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Some(Arc::clone(pool));
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads.saturating_sub(1).max(1))
        .thread_name(move |i| format!("sieve-{threads}-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Some(pool)
}
