//! The thread pool the kernels run on: rayon's current pool (the global one by default, all
//! cores), sized once with [`set_threads`] or per call with [`rayon::ThreadPool::install`].

use crate::Result;

/// Sizes rayon's global pool to `threads` threads (`0`: one per core, rayon's default). Every
/// kernel call outside a [`rayon::ThreadPool::install`] uses that pool; results are the same for
/// any size.
///
/// # Errors
/// [`crate::Error::ThreadPool`] if the global pool already exists (something used rayon
/// before) or a thread could not be spawned.
pub fn set_threads(threads: usize) -> Result<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()?;
    Ok(())
}

/// The size of the pool kernel calls run on (rayon's current pool).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f` on a thread of the current rayon pool and returns its result (inline when already
/// on one).
///
/// Wrap a whole forward pass in it: called from outside the pool, every parallel kernel call
/// hands its tasks to the pool's threads and sleeps until they finish (a cross-thread wake-up
/// per call, hundreds per token); from inside, the calls split their work with cheap
/// work-stealing joins.
pub fn on_pool<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::join(f, || ()).0
}

#[cfg(test)]
mod tests {
    #[test]
    fn on_pool_runs_on_a_pool_thread() {
        assert!(rayon::current_thread_index().is_none());
        let inside = super::on_pool(|| rayon::current_thread_index().is_some());
        assert!(inside);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| super::on_pool(|| 7)), 7);
    }
}
