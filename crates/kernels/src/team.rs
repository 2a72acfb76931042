//! The threads a parallel kernel call runs its tasks on: a fixed team that spins between calls.
//!
//! A decode step makes a few hundred small parallel calls (four or five per layer, each tens
//! of microseconds long). Rayon's idle workers yield a few dozen times and then sleep on a
//! futex, so most of those calls paid a cross-thread wake-up — on the development machine
//! about a sixth of a decode step went to the scheduler. The team's helpers instead spin on
//! an epoch counter for [`SPIN`] after their last task (the gaps inside a forward pass are far
//! shorter) and only then park, so a call costs a few cache-line transfers.
//!
//! The calling thread takes tasks too. Tasks are handed out in index order from one counter,
//! so which thread runs a task depends on timing, never what it computes: every kernel's
//! tasks write disjoint outputs, each with its own fixed reduction order.
//!
//! One call runs on the team at a time: a call made while the team is busy (from another
//! thread, or from inside a task) runs its tasks on its own thread. The team's width is the
//! current rayon pool's ([`crate::threads`]: the global pool sized by [`crate::set_threads`],
//! or the pool of an enclosing [`rayon::ThreadPool::install`]); helpers are started the first
//! time a call needs them.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it parks: longer than the gaps inside a forward pass
/// and than sampling a token between two passes, short enough that an idle server's cores
/// go quiet at once.
const SPIN: Duration = Duration::from_millis(2);

/// The task body of one call, with its lifetime erased (see [`Team::run`] for why that is
/// sound).
type Body = *const (dyn Fn(usize) + Sync);

/// The call being run, written only while no helper can read it (see [`Team::publish`]).
struct Job {
    body: Body,
    tasks: usize,
    /// Helpers with an index below this take part.
    helpers: usize,
}

/// State shared between the caller and the helpers.
struct Team {
    /// Even: the job of that number is published. Odd: a job is being written.
    epoch: AtomicU64,
    job: UnsafeCell<Job>,
    /// The next task index to hand out.
    next: AtomicUsize,
    /// Tasks finished in the current job.
    done: AtomicUsize,
    /// Helpers between joining a job and leaving it (a job is only rewritten at zero).
    active: AtomicUsize,
    /// Whether a task of the current job panicked (the caller then panics too).
    panicked: AtomicBool,
    /// Helpers parked on `wake` (checked by the caller after each publication).
    parked: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// Held by the one caller using the team.
    busy: Mutex<()>,
    /// Helpers started so far.
    started: Mutex<usize>,
}

// SAFETY: `job` is written only by the caller holding `busy`, while `epoch` is odd and no
// helper is active; helpers read it only between joining (with `epoch` even and re-checked
// after counting themselves `active`) and leaving. Its `body` is a `Sync` closure, called
// only while its caller waits in `Team::run`.
unsafe impl Sync for Team {}
// SAFETY: as for `Sync`; the team lives in a `static` and is never moved between threads.
unsafe impl Send for Team {}

/// The process's team.
fn team() -> &'static Team {
    static TEAM: OnceLock<Team> = OnceLock::new();
    static NOTHING: fn(usize) = |_| {};
    TEAM.get_or_init(|| Team {
        epoch: AtomicU64::new(0),
        job: UnsafeCell::new(Job {
            body: &NOTHING as &(dyn Fn(usize) + Sync) as Body,
            tasks: 0,
            helpers: 0,
        }),
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        active: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        parked: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        busy: Mutex::new(()),
        started: Mutex::new(0),
    })
}

/// Runs `body(i)` for every `i < tasks`, on the calling thread and up to
/// [`crate::threads`]` - 1` helpers; returns when all have finished.
///
/// # Panics
/// If a task panics (after every task has finished).
pub(crate) fn for_each(tasks: usize, body: &(dyn Fn(usize) + Sync)) {
    let width = rayon::current_num_threads().min(tasks);
    if width <= 1 {
        run_here(tasks, body);
        return;
    }
    let t = team();
    let _guard = match t.busy.try_lock() {
        Ok(guard) => guard,
        // A task of an earlier call panicked while it held the team; the team is sound.
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        // Another call holds the team (or this is a task of it): run here.
        Err(std::sync::TryLockError::WouldBlock) => {
            run_here(tasks, body);
            return;
        }
    };
    t.run(tasks, width - 1, body);
}

/// Runs every task on the calling thread, in index order; a task's panic is raised again
/// once all have run, as on the team.
fn run_here(tasks: usize, body: &(dyn Fn(usize) + Sync)) {
    let mut first_panic = None;
    for i in 0..tasks {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(i))) {
            first_panic.get_or_insert(panic);
        }
    }
    if let Some(panic) = first_panic {
        std::panic::resume_unwind(panic);
    }
}

/// Runs `body(index, chunk)` for each `chunk`-long piece of `data` (the last may be shorter),
/// as [`for_each`] does.
pub(crate) fn for_each_chunk<T: Send>(
    data: &mut [T],
    chunk: usize,
    body: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    let chunk = chunk.max(1);
    let (len, base) = (data.len(), SendPtr(data.as_mut_ptr()));
    for_each(len.div_ceil(chunk), &|i| {
        let start = i * chunk;
        let n = chunk.min(len - start);
        // SAFETY: piece `i` is `start..start + n` of `data`, which is borrowed mutably for
        // the call; pieces of different indices do not overlap and each index runs once.
        let piece = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), n) };
        body(i, piece);
    });
}

/// A pointer the tasks of one call may share (they touch disjoint parts of what it points
/// to).
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

impl<T> SendPtr<T> {
    /// The pointer.
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: only used to hand disjoint pieces of a `Send` slice to tasks (`for_each_chunk`,
// `attend_many`).
unsafe impl<T: Send> Sync for SendPtr<T> {}

impl Team {
    /// Publishes the job, takes tasks until none is left, and waits for the helpers' ones.
    /// The caller holds `busy`.
    fn run(&'static self, tasks: usize, helpers: usize, body: &(dyn Fn(usize) + Sync)) {
        self.start(helpers);
        // SAFETY: (lifetime) the helpers call `body` only for task indices below `tasks`, and
        // this function returns only once `done == tasks`, i.e. after the last such call has
        // returned; a helper that joins late finds `next ≥ tasks` and never calls it.
        let body: Body = unsafe { std::mem::transmute::<_, Body>(body) };
        self.publish(Job {
            body,
            tasks,
            helpers,
        });
        // SAFETY: the job is published and not rewritten before this call returns.
        unsafe { self.take_tasks() };
        while self.done.load(Acquire) < tasks {
            std::hint::spin_loop();
        }
        if self.panicked.swap(false, AcqRel) {
            panic!("a kernel task panicked");
        }
    }

    /// Writes `job` once no helper is inside the previous one, then makes it visible.
    fn publish(&self, job: Job) {
        let epoch = self.epoch.load(Relaxed);
        // Odd: helpers that have not joined the previous job will not now.
        self.epoch.store(epoch + 1, SeqCst);
        while self.active.load(SeqCst) > 0 {
            std::hint::spin_loop();
        }
        // SAFETY: `epoch` is odd and no helper is active (see `Team`'s `Sync`).
        unsafe { *self.job.get() = job };
        self.next.store(0, Relaxed);
        self.done.store(0, Relaxed);
        self.epoch.store(epoch + 2, SeqCst);
        if self.parked.load(SeqCst) > 0 {
            let _lock = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }

    /// Runs tasks of the current job until none is left.
    ///
    /// # Safety
    /// The job is published and stays so for the call (the caller, or an active helper).
    unsafe fn take_tasks(&self) {
        // SAFETY: our caller guarantees the job is published and not rewritten during the call,
        // so no `&mut` to it exists while we read it.
        let job = unsafe { &*self.job.get() };
        loop {
            let i = self.next.fetch_add(1, AcqRel);
            if i >= job.tasks {
                return;
            }
            // SAFETY: `body` was erased from a reference that `run` keeps alive until every task
            // index below `job.tasks` (this `i` included) has returned.
            let body = unsafe { &*job.body };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(i))).is_err() {
                self.panicked.store(true, Release);
            }
            self.done.fetch_add(1, AcqRel);
        }
    }

    /// Starts helpers until there are `helpers`.
    fn start(&'static self, helpers: usize) {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        while *started < helpers {
            let index = *started;
            let spawned = std::thread::Builder::new()
                .name(format!("sieve-kernels-{index}"))
                .spawn(move || self.help(index));
            if spawned.is_err() {
                // Fewer helpers: the caller takes the tasks they would have.
                return;
            }
            *started += 1;
        }
    }

    /// A helper's life: wait for a job it takes part in, take tasks, repeat.
    fn help(&self, index: usize) {
        let mut seen = self.epoch.load(Acquire);
        loop {
            let epoch = self.wait_for_job(seen);
            seen = epoch;
            self.active.fetch_add(1, SeqCst);
            // Joined only if the job is still the published one (not being rewritten).
            // SAFETY: `active` is counted and the epoch is the published one, so the job is
            // not rewritten before `active` drops.
            if self.epoch.load(SeqCst) == epoch && index < unsafe { (*self.job.get()).helpers } {
                // SAFETY: as above.
                unsafe { self.take_tasks() };
            }
            self.active.fetch_sub(1, SeqCst);
        }
    }

    /// Spins until a job newer than `seen` is published (parking after [`SPIN`]), and
    /// returns its epoch.
    fn wait_for_job(&self, seen: u64) -> u64 {
        let fresh = |e: u64| e != seen && e.is_multiple_of(2);
        let since = Instant::now();
        let mut spins = 0u32;
        loop {
            let e = self.epoch.load(Acquire);
            if fresh(e) {
                return e;
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) && since.elapsed() > SPIN {
                break;
            }
        }
        // Park: counted first, so a caller publishing after this reads `parked > 0` and
        // notifies; a publication before it is seen by the check under the lock.
        let mut lock = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.parked.fetch_add(1, SeqCst);
        loop {
            let e = self.epoch.load(SeqCst);
            if fresh(e) {
                self.parked.fetch_sub(1, SeqCst);
                return e;
            }
            lock = self.wake.wait(lock).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_task_runs_once() {
        for tasks in [0, 1, 2, 3, 17, 1000] {
            let counts: Vec<AtomicU32> = (0..tasks).map(|_| AtomicU32::new(0)).collect();
            for_each(tasks, &|i| {
                counts[i].fetch_add(1, Relaxed);
            });
            assert!(counts.iter().all(|c| c.load(Relaxed) == 1), "{tasks}");
        }
    }

    #[test]
    fn chunks_cover_the_slice() {
        let mut data = vec![0usize; 1003];
        for_each_chunk(&mut data, 100, &|i, piece| {
            for (j, x) in piece.iter_mut().enumerate() {
                *x = i * 100 + j;
            }
        });
        assert!(data.iter().enumerate().all(|(i, &x)| i == x));
    }

    #[test]
    fn calls_from_many_threads_and_nested_calls_all_complete() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let total = AtomicU32::new(0);
        pool.install(|| {
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        for _ in 0..200 {
                            for_each(8, &|_| {
                                for_each(3, &|_| {
                                    total.fetch_add(1, Relaxed);
                                });
                            });
                        }
                    });
                }
            });
        });
        assert_eq!(total.load(Relaxed), 4 * 200 * 8 * 3);
    }

    #[test]
    fn helpers_park_and_wake() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            for _ in 0..3 {
                let n = AtomicU32::new(0);
                for_each(64, &|_| {
                    n.fetch_add(1, Relaxed);
                });
                assert_eq!(n.load(Relaxed), 64);
                std::thread::sleep(SPIN * 3);
            }
        });
    }

    /// Runs 16 tasks on a pool of `threads`, task 5 panicking: the call panics, and only
    /// after every task has run.
    fn panic_in_task_5(threads: usize) -> rayon::ThreadPool {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let ran = AtomicU32::new(0);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                for_each(16, &|i| {
                    ran.fetch_add(1, Relaxed);
                    assert_ne!(i, 5, "task 5 fails");
                })
            })
        }));
        assert!(result.is_err());
        assert_eq!(ran.load(Relaxed), 16, "threads={threads}");
        pool
    }

    #[test]
    fn a_panicking_task_panics_the_caller_after_the_others_finish() {
        let pool = panic_in_task_5(2);
        // The team still works.
        let n = AtomicU32::new(0);
        pool.install(|| {
            for_each(16, &|_| {
                n.fetch_add(1, Relaxed);
            })
        });
        assert_eq!(n.load(Relaxed), 16);
    }

    #[test]
    fn a_panicking_task_on_one_thread_also_lets_the_others_run() {
        panic_in_task_5(1);
    }
}
