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
