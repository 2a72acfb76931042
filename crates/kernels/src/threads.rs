//! How many threads the kernels use: the size of rayon's current pool (the global one by
//! default, all cores), set once with [`set_threads`] or per call with
//! [`rayon::ThreadPool::install`]. The work itself runs on the kernels' own team (`team`).

use crate::Result;

/// Sizes rayon's global pool, and so the kernels' thread count, to `threads` threads (`0`:
/// one per core, rayon's default). Every kernel call outside a [`rayon::ThreadPool::install`]
/// uses that count; results are the same for any size.
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

/// The number of threads a kernel call splits its work between (rayon's current pool size).
pub fn threads() -> usize {
    rayon::current_num_threads()
}
