//! [`Scheduler`]: the handle clients hold. It owns the channel into the worker thread (which
//! owns the model), the bound on waiting requests, and the gauges `/metrics` reads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sieve_core::Vocab;

use super::request::Request;
use super::shared::Shared;
pub use super::shared::{SchedulerConfig, Status};
use super::worker::Worker;
use crate::batch::BatchModel;
use crate::model::Detokenize;
use crate::step::check_prompt;
use crate::{BoxError, Error, Result};

/// A continuous-batching scheduler over a [`BatchModel`] on its own thread (see the
/// [module](super) docs). Share it between request handlers behind an `Arc`.
#[derive(Debug)]
pub struct Scheduler {
    sender: Option<mpsc::Sender<Request>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the worker thread, which calls `load` to make its model (so the model never
    /// crosses threads and need not be `Send`), then serves the requests submitted, in order
    /// of arrival. `vocab` is passed to the stages in their step context.
    ///
    /// # Errors
    /// [`Error::Stopped`] when the thread cannot be started. A failing `load` is reported by
    /// [`Scheduler::status`] and [`Scheduler::wait_ready`].
    pub fn start<M, F>(
        load: F,
        detokenizer: Arc<dyn Detokenize + Send + Sync>,
        vocab: Option<Arc<Vocab>>,
        config: SchedulerConfig,
    ) -> Result<Self>
    where
        M: BatchModel + 'static,
        F: FnOnce() -> std::result::Result<M, BoxError> + Send + 'static,
    {
        let shared = Arc::new(Shared {
            config,
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            context: AtomicUsize::new(0),
            status: Mutex::new(Status::Loading),
            changed: Condvar::new(),
        });
        let (sender, receiver) = mpsc::channel();
        let worker_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("sieve-scheduler".to_string())
            .spawn(move || Worker::serve(load, detokenizer, vocab, worker_shared, receiver))
            .map_err(|e| Error::Stopped(format!("cannot start the scheduler thread: {e}")))?;
        Ok(Scheduler {
            sender: Some(sender),
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `request`. Its events arrive through its sink.
    ///
    /// # Errors
    /// [`Error::EmptyPrompt`], and [`Error::ContextOverflow`] for a prompt longer than the
    /// loaded model's context ([`check_prompt`]); [`Error::Choices`] for no pipeline or more
    /// than [`SchedulerConfig::parallel`]; [`Error::QueueFull`] when [`SchedulerConfig::max_queue`]
    /// requests already wait; [`Error::Stopped`] when the worker has stopped.
    pub fn submit(&self, request: Request) -> Result<()> {
        let config = &self.shared.config;
        // 0 until the worker has loaded the model: only emptiness can be checked before.
        let context = match self.shared.context.load(Ordering::Acquire) {
            0 => usize::MAX,
            context => context,
        };
        check_prompt(&request.prompt, 0, context)?;
        let n = request.pipelines.len();
        if n == 0 || n > config.parallel {
            return Err(Error::Choices {
                n,
                parallel: config.parallel,
            });
        }
        if let Status::Stopped(why) = self.status() {
            return Err(Error::Stopped(why));
        }
        let max = config.max_queue;
        self.shared
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w < max).then_some(w + 1)
            })
            .map_err(|_| Error::QueueFull { capacity: max })?;
        let sent = match &self.sender {
            Some(sender) => sender.send(request).is_ok(),
            None => false,
        };
        if !sent {
            self.shared.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Stopped("the scheduler has stopped".to_string()));
        }
        Ok(())
    }

    /// Loading, ready, or stopped.
    pub fn status(&self) -> Status {
        self.shared
            .status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Blocks until the model is loaded (or `timeout` passes: then the status is still
    /// [`Status::Loading`]).
    ///
    /// # Errors
    /// [`Error::Stopped`] when the model failed to load.
    pub fn wait_ready(&self, timeout: Duration) -> Result<Status> {
        let status = self.shared.status.lock().unwrap_or_else(|e| e.into_inner());
        let (status, _) = self
            .shared
            .changed
            .wait_timeout_while(status, timeout, |s| *s == Status::Loading)
            .unwrap_or_else(|e| e.into_inner());
        match &*status {
            Status::Stopped(why) => Err(Error::Stopped(why.clone())),
            s => Ok(s.clone()),
        }
    }

    /// Requests waiting to start.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::Acquire)
    }

    /// Sequences the model holds (prefilling or decoding).
    pub fn running(&self) -> usize {
        self.shared.running.load(Ordering::Acquire)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> SchedulerConfig {
        self.shared.config
    }

    /// Stops accepting requests, lets the worker finish those it has, and waits for it.
    pub fn shutdown(mut self) {
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
