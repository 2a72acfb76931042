//! Where a request's heavy preparation runs: reading its fields, rendering the chat template,
//! tokenizing the prompt and building its pipelines (a grammar compiles then). That work can
//! take seconds for a hostile request, so it runs on tokio's blocking threads, never on the
//! async workers that answer `/health` and move every stream, and at most
//! [`WorkLimits::threads`] jobs run at once. Jobs wait for a thread in turn; past
//! [`WorkLimits::waiting`] jobs waiting, a request is refused at once with 503.
//!
//! A job, once started, runs to its end even if its client goes away (it holds its thread
//! until then), so the number of threads busy with requests never exceeds the limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::{Error, Result};

/// How much preparation runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimits {
    /// Jobs running at once.
    pub threads: usize,
    /// Jobs waiting for a thread before requests are refused.
    pub waiting: usize,
}

impl Default for WorkLimits {
    /// As many threads as the machine has cores, and 64 jobs waiting.
    fn default() -> Self {
        WorkLimits {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            waiting: 64,
        }
    }
}

/// Runs request preparation off the async workers, bounded by [`WorkLimits`].
#[derive(Debug)]
pub struct WorkPool {
    limits: WorkLimits,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
}

impl WorkPool {
    /// A pool with these limits (at least one thread).
    pub fn new(limits: WorkLimits) -> Self {
        let threads = limits.threads.max(1);
        WorkPool {
            limits: WorkLimits { threads, ..limits },
            permits: Arc::new(Semaphore::new(threads)),
            waiting: AtomicUsize::new(0),
        }
    }

    /// The pool's limits.
    pub fn limits(&self) -> WorkLimits {
        self.limits
    }

    /// Jobs waiting for a thread now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Runs `job` on a blocking thread once one of the pool's turns is free, and returns what
    /// it returns.
    ///
    /// # Errors
    /// [`Error::QueueFull`] (503) when [`WorkLimits::waiting`] jobs wait already; [`Error::Generation`]
    /// if the job panicked (a bug: the panic is caught, the server goes on).
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let permit = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let waiting = self.waiting.fetch_add(1, Ordering::AcqRel);
                let _counted = Uncount(&self.waiting);
                if waiting >= self.limits.waiting {
                    return Err(Error::QueueFull {
                        capacity: self.limits.waiting,
                    });
                }
                Arc::clone(&self.permits)
                    .acquire_owned()
                    .await
                    .map_err(|_| Error::Unavailable("the server is stopping".to_string()))?
            }
        };
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await
        .unwrap_or_else(|e| {
            Err(Error::Generation(format!(
                "preparing the request failed: {e}"
            )))
        })
    }
}

/// Takes one back from a waiting count when dropped (the job got its turn, was refused, or
/// its client went away while it waited).
struct Uncount<'a>(&'a AtomicUsize);

impl Drop for Uncount<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn jobs_run_off_the_async_workers_and_at_most_threads_at_once() {
        let pool = Arc::new(WorkPool::new(WorkLimits {
            threads: 1,
            waiting: 1,
        }));
        let (release, held) = mpsc::channel::<()>();
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let first = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move {
                pool.run(move || {
                    let _ = started_tx.send(());
                    held.recv().ok();
                    Ok(1)
                })
                .await
            })
        };
        started.await.unwrap();
        // The job blocks its thread; the runtime's one async worker still runs tasks.
        let other = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            5
        });
        let other = tokio::time::timeout(Duration::from_secs(30), other).await;
        assert_eq!(other.unwrap().unwrap(), 5);
        // The one thread is busy: a second job waits, a third is refused at once.
        let second = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(|| Ok(2)).await })
        };
        while pool.waiting() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        match pool.run(|| Ok(3)).await {
            Err(Error::QueueFull { capacity: 1 }) => {}
            other => panic!("{other:?}"),
        }
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1);
        assert_eq!(second.await.unwrap().unwrap(), 2);
        assert_eq!(pool.waiting(), 0);
    }

    #[tokio::test]
    async fn a_panicking_job_is_an_error_not_a_crash() {
        let pool = WorkPool::new(WorkLimits::default());
        let got: Result<()> = pool.run(|| panic!("boom")).await;
        assert!(matches!(got, Err(Error::Generation(_))), "{got:?}");
        assert_eq!(pool.run(|| Ok(7)).await.unwrap(), 7);
    }
}
