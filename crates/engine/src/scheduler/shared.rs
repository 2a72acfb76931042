//! What the [`Scheduler`](super::Scheduler) handle and the worker thread share: the
//! configuration, the worker's [`Status`], and the gauges `/metrics` reads.

use std::sync::atomic::AtomicUsize;
use std::sync::{Condvar, Mutex};

/// How the scheduler batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// The most sequences decoding at once (a request of `n` choices takes `n`).
    pub parallel: usize,
    /// The most requests waiting to start; more are refused with [`Error::QueueFull`](crate::Error::QueueFull).
    pub max_queue: usize,
    /// The most prompt tokens prefilled in one step, so that running streams keep flowing
    /// while a long prompt is read.
    pub prefill_chunk: usize,
}

impl Default for SchedulerConfig {
    /// 16 sequences, 256 waiting requests, 512-token prefill chunks.
    fn default() -> Self {
        SchedulerConfig {
            parallel: 16,
            max_queue: 256,
            prefill_chunk: 512,
        }
    }
}

/// Where the worker is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Loading the model: requests are queued.
    Loading,
    /// Serving.
    Ready,
    /// The model did not load, or the worker stopped; the message says why.
    Stopped(String),
}

/// What the handle and the worker share.
#[derive(Debug)]
pub(super) struct Shared {
    pub config: SchedulerConfig,
    /// Requests submitted and not yet started (or dropped).
    pub waiting: AtomicUsize,
    /// Sequences the model holds.
    pub running: AtomicUsize,
    /// The model's context, once loaded (0 before).
    pub context: AtomicUsize,
    pub status: Mutex<Status>,
    pub changed: Condvar,
}

impl Shared {
    /// Sets the status and wakes whoever waits for it.
    pub fn set_status(&self, status: Status) {
        let mut s = self.status.lock().unwrap_or_else(|e| e.into_inner());
        *s = status;
        self.changed.notify_all();
    }
}
