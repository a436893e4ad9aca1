//! Helper threads that work beside the calling thread.
//!
//! [`run_beside`] runs one closure on the caller and on up to N parked
//! helper threads at once; the closure shares out the work itself (decoding
//! claims pieces from a counter). Why not spawn threads per call, or hand
//! the work to a pool and wait:
//! - spawning cost the caller 40-90 µs per decode (stack mmap, clone) and the
//!   new thread started 150-280 µs late on an idle core; a parked helper is
//!   woken in ~80 µs;
//! - after a busy spell on one core, Linux placed both of two *new* threads
//!   on the other core (2 vCPUs: two spawned 4 ms jobs took 8 ms in turn),
//!   so the caller works instead of waiting;
//! - the caller spins briefly rather than sleeping while the last helper
//!   finishes: a parked thread on these VMs wakes tens of µs late.
//!
//! Helpers are started on first use (one per core but the caller's) and
//! again in a forked child, which inherits none of its parent's threads.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The cores this process may use, asked once: `available_parallelism`
/// reads the affinity mask and cgroup quota files, ~12 µs, as long as
/// decoding a small fetch.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// How long the caller spins for helpers to finish before parking.
const SPIN: Duration = Duration::from_micros(300);

/// Run `work` on the calling thread and, at the same time, on up to
/// `helpers` helper threads; return once every run has returned. A helper
/// that wakes after the caller's own run has returned does not run `work`,
/// so `work` must finish the job on any number of threads, the caller alone
/// included. While another call has the helpers, `work` runs on the caller
/// alone. Returns false if a helper's run panicked.
pub fn run_beside<F: Fn() + Sync>(helpers: usize, work: &F) -> bool {
    let pool = if helpers > 0 { pool() } else { None };
    let call = Call {
        finished: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        caller: std::thread::current(),
    };
    let erased: &(dyn Fn() + Sync) = work;
    // SAFETY: the task is used only by helpers that took it, and `Retract`
    // (dropped after `work` returns or unwinds on this thread) withdraws it
    // and waits until every helper that took it is done with both
    // references, before `work` and `call` go out of scope.
    let task = unsafe {
        Task {
            work: std::mem::transmute::<&(dyn Fn() + Sync), &'static (dyn Fn() + Sync)>(erased),
            call: &*std::ptr::from_ref(&call),
        }
    };
    let retract = pool
        .filter(|pool| pool.post(task, helpers.min(pool.size)))
        .map(|pool| Retract { pool, call: &call });
    work();
    drop(retract);
    !call.panicked.load(Ordering::Acquire)
}

/// One `run_beside` call, as helpers see it.
struct Call {
    /// Helpers that took the task and have returned from it.
    finished: AtomicUsize,
    panicked: AtomicBool,
    caller: Thread,
}

#[derive(Clone, Copy)]
struct Task {
    work: &'static (dyn Fn() + Sync),
    call: &'static Call,
}

// SAFETY: a `Task` is only dereferenced under the protocol of `run_beside`
// (its referents outlive every use); `work` is `Sync`, and `Call` holds
// atomics and a `Thread` handle.
unsafe impl Send for Task {}

struct Posted {
    task: Option<Task>,
    /// Helpers still wanted for the task.
    wanted: usize,
    /// Helpers that took it.
    taken: usize,
}

impl Posted {
    /// No task: what a pool starts with and a withdrawn task leaves.
    const IDLE: Posted = Posted {
        task: None,
        wanted: 0,
        taken: 0,
    };
}

struct Pool {
    posted: Mutex<Posted>,
    wake: Condvar,
    size: usize,
}

/// Withdraws the task once the caller's own run has ended (or unwound), then
/// waits for the helpers that took it.
struct Retract<'a> {
    pool: &'static Pool,
    call: &'a Call,
}

impl Drop for Retract<'_> {
    fn drop(&mut self) {
        let taken = std::mem::replace(&mut *self.pool.lock(), Posted::IDLE).taken;
        let start = Instant::now();
        while self.call.finished.load(Ordering::Acquire) < taken {
            if start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                // A helper unparks us after counting itself finished.
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
}

impl Pool {
    /// A pool of `size` helpers (fewer if threads cannot be spawned).
    fn start(size: usize) -> &'static Pool {
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            posted: Mutex::new(Posted::IDLE),
            wake: Condvar::new(),
            size,
        }));
        for n in 0..size {
            let spawned = std::thread::Builder::new()
                .name(format!("kafkabatch-{n}"))
                .stack_size(HELPER_STACK)
                .spawn(move || pool.serve());
            // With fewer helpers than asked for, a posted task keeps wanting
            // the missing ones until it is withdrawn: harmless.
            if spawned.is_err() {
                break;
            }
        }
        pool
    }

    fn lock(&self) -> MutexGuard<'_, Posted> {
        self.posted.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Offer `task` to `helpers` helpers; false if another call has them.
    fn post(&self, task: Task, helpers: usize) -> bool {
        let mut posted = self.lock();
        if posted.task.is_some() || helpers == 0 {
            return false;
        }
        *posted = Posted {
            task: Some(task),
            wanted: helpers,
            taken: 0,
        };
        drop(posted);
        for _ in 0..helpers {
            self.wake.notify_one();
        }
        true
    }

    fn serve(&self) {
        loop {
            let task = {
                let mut posted = self.lock();
                loop {
                    if let (Some(task), true) = (posted.task, posted.wanted > 0) {
                        posted.wanted -= 1;
                        posted.taken += 1;
                        break task;
                    }
                    posted = self.wake.wait(posted).unwrap_or_else(|e| e.into_inner());
                }
            };
            if catch_unwind(AssertUnwindSafe(task.work)).is_err() {
                task.call.panicked.store(true, Ordering::Release);
            }
            let caller = task.call.caller.clone();
            // The last use of `task`: the caller may return once it sees this.
            task.call.finished.fetch_add(1, Ordering::AcqRel);
            caller.unpark();
        }
    }
}

/// Stack of a helper: Rust's default for spawned threads (the codecs'
/// decoders are not all known to stay small); untouched pages cost nothing.
const HELPER_STACK: usize = 2 << 20;

/// This process's helpers, one per core but the caller's, started on first
/// use; `None` on a single core. A forked child starts its own.
fn pool() -> Option<&'static Pool> {
    static POOL: Mutex<Option<(u32, &'static Pool)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = match *slot {
        Some((owner, pool)) if owner == pid => pool,
        _ => slot.insert((pid, Pool::start(cores() - 1))).1,
    };
    (pool.size > 0).then_some(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claims items 0..n from a counter, as decoding claims pieces.
    fn count_to(n: usize, helpers: usize) -> (Vec<usize>, bool) {
        let next = AtomicUsize::new(0);
        let seen = Mutex::new(Vec::new());
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
            seen.lock().expect("lock").push(i);
        };
        let ok = run_beside(helpers, &work);
        let mut seen = seen.into_inner().expect("lock");
        seen.sort_unstable();
        (seen, ok)
    }

    #[test]
    fn every_item_is_done_once_with_or_without_helpers() {
        for helpers in [0, 1, 3] {
            assert_eq!(count_to(200, helpers), ((0..200).collect(), true), "helpers {helpers}");
        }
    }

    #[test]
    fn concurrent_callers_share_the_helpers() {
        let runs: Vec<_> = (0..6).map(|_| std::thread::spawn(|| count_to(100, 1))).collect();
        for run in runs {
            assert_eq!(run.join().expect("no panic"), ((0..100).collect(), true));
        }
    }

    #[test]
    fn a_panic_on_a_helper_is_reported_not_propagated() {
        if pool().is_none() {
            return; // one core: no helpers to panic
        }
        // The caller waits (a while) for a helper to take the task, so the test
        // does not depend on a helper waking before the caller is done: on a
        // loaded machine, or while other tests hold the helpers, it may not.
        let entered = AtomicBool::new(false);
        let work = || {
            let on_helper = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("kafkabatch-"));
            if on_helper {
                entered.store(true, Ordering::Release);
                panic!("deliberate panic on a helper");
            }
            let until = std::time::Instant::now() + Duration::from_millis(200);
            while !entered.load(Ordering::Acquire) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_micros(50));
            }
        };
        let panicked = (0..50).any(|_| {
            entered.store(false, Ordering::Relaxed);
            !run_beside(1, &work)
        });
        assert!(panicked);
        assert_eq!(count_to(50, 1), ((0..50).collect(), true), "the pool still serves");
    }
}
