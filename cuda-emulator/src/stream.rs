//! Streams as a device runs them: each stream the driver creates has a worker thread that runs
//! its queued work in order, after the call that queued it has returned.
//!
//! `cuMemcpyHtoDAsync_v2`, `cuLaunchKernel` and `cuMemcpyDtoHAsync_v2` on a created stream
//! check their arguments and queue the work; the stream's worker runs it later, reading and
//! writing host memory then (so a caller that touches its buffers before synchronising sees
//! the race a GPU would show; a copy from the device into pageable host memory is the
//! exception: its call returns once it has run, as a GPU's does), and a kernel's fault becomes
//! its context's sticky error when the kernel runs, reported by the next call that checks the
//! context (`cuStreamSynchronize` first). Work queued in a context that has a sticky error, or that is gone, is dropped
//! unrun, as a device drops it. The default streams (handles 0, 1 and 2) run their work at
//! once, on the calling thread.
//!
//! A **slow device** ([`set_delay`]) waits before each queued operation, so a test can show
//! that a launcher never reads what a queued copy has not yet written. Kernels of different
//! streams run at the same time, on their workers: [`most_concurrent_kernels`] says how many
//! ran at once. **Inline** ([`set_inline`]) runs queued work on the calling thread, before the
//! call returns, for measuring the host's own cost without the emulator's hand-offs between
//! threads (which are not a GPU's costs either).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Work queued on a stream.
pub type Op = Box<dyn FnOnce() + Send + 'static>;

/// The wait before each queued operation, in microseconds (0: none).
static DELAY_MICROS: AtomicU64 = AtomicU64::new(0);
/// Whether queued work runs on the calling thread ([`set_inline`]).
static INLINE: AtomicBool = AtomicBool::new(false);
/// Kernels running now, and the most that ever ran at once.
static RUNNING: AtomicU64 = AtomicU64::new(0);
static MOST_RUNNING: AtomicU64 = AtomicU64::new(0);

/// Makes every queued operation wait `delay` before it runs (a slow device); zero for none.
pub fn set_delay(delay: Duration) {
    DELAY_MICROS.store(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Makes work queued from now on run on the calling thread before the call returns (`true`),
/// or on the streams' workers (`false`, the default), for the whole library.
pub fn set_inline(inline: bool) {
    INLINE.store(inline, Ordering::Relaxed);
}

/// The most kernels that ran at the same time since the library was loaded.
pub fn most_concurrent_kernels() -> u64 {
    MOST_RUNNING.load(Ordering::Relaxed)
}

/// Marks a kernel running until the guard drops (for [`most_concurrent_kernels`]).
pub fn kernel_running() -> impl Drop {
    let now = RUNNING.fetch_add(1, Ordering::AcqRel).saturating_add(1);
    MOST_RUNNING.fetch_max(now, Ordering::AcqRel);
    Running
}

struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream's queue, shared by the stream's entry in the library state and its worker.
#[derive(Default)]
pub struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

#[derive(Default)]
struct QueueState {
    ops: VecDeque<Op>,
    /// The worker is running an operation.
    busy: bool,
    /// The stream was destroyed: the worker runs what is queued, then ends.
    closed: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Queue")
            .field("queued", &state.ops.len())
            .field("busy", &state.busy)
            .field("closed", &state.closed)
            .finish()
    }
}

impl Queue {
    /// A queue and its worker thread; `None` when the system refuses the thread.
    pub fn start() -> Option<Arc<Queue>> {
        let queue = Arc::new(Queue::default());
        let worker = Arc::clone(&queue);
        std::thread::Builder::new().name("kargs-emu-stream".into()).spawn(move || worker.run()).ok()?;
        Some(queue)
    }

    /// Queues `op` to run after everything queued before it (inline: runs it now, after
    /// that). The caller holds no lock of the library state: `op` may take it.
    pub fn push(&self, op: Op) {
        if INLINE.load(Ordering::Relaxed) {
            self.wait_idle();
            op();
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ops.push_back(op);
        self.changed.notify_all();
    }

    /// Whether everything queued so far has run.
    pub fn is_idle(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ops.is_empty() && !state.busy
    }

    /// Waits until everything queued so far has run.
    pub fn wait_idle(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !state.ops.is_empty() || state.busy {
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Lets the worker end once the queue is empty (`cuStreamDestroy`: the call returns at
    /// once, the work already queued still runs).
    pub fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        self.changed.notify_all();
    }

    fn run(&self) {
        loop {
            let op = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(op) = state.ops.pop_front() {
                        state.busy = true;
                        break op;
                    }
                    if state.closed {
                        return;
                    }
                    state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let delay = DELAY_MICROS.load(Ordering::Relaxed);
            if delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            // An operation that panics is dropped; the worker goes on with the next one.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op));
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.busy = false;
            self.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn work_runs_in_order_after_the_call_and_wait_idle_waits_for_it() {
        let queue = Queue::start().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (gate, open) = (Arc::new(Mutex::new(())), Arc::new(AtomicUsize::new(0)));
        let held = gate.lock().unwrap();
        for i in 0..3 {
            let (seen, gate, open) = (Arc::clone(&seen), Arc::clone(&gate), Arc::clone(&open));
            queue.push(Box::new(move || {
                drop(gate.lock());
                open.fetch_add(1, Ordering::SeqCst);
                seen.lock().unwrap().push(i);
            }));
        }
        // Nothing ran yet: the first operation waits on the gate this thread holds.
        assert_eq!(open.load(Ordering::SeqCst), 0);
        drop(held);
        queue.wait_idle();
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2]);
        queue.close();
    }
}
