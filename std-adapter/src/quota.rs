//! Quotas: how much of the host's resources one launch, one guest and one device may hold.
//! Each refusal is [`AbiError::QuotaExceeded`](crate::AbiError::QuotaExceeded) with a
//! [`QuotaError`] naming the quota, what the launch would have taken and the limit.
//!
//! | quota | set with | default | checked |
//! |---|---|---|---|
//! | [`Quota::ThreadsPerLaunch`] | [`LaunchLimits::max_threads_per_launch`](crate::LaunchLimits) | [`DEFAULT_MAX_THREADS_PER_LAUNCH`](crate::limits::DEFAULT_MAX_THREADS_PER_LAUNCH) (2³²) | by the host, after the launch shape, before the argv is read |
//! | [`Quota::StagingBytes`] | [`LaunchLimits::max_staging_bytes`](crate::LaunchLimits) | [`DEFAULT_MAX_STAGING_BYTES`](crate::limits::DEFAULT_MAX_STAGING_BYTES) (1 GiB) | by a launcher that copies windows to the device (the CUDA backend's staged mode), from [`LaunchRequest::limits`](crate::LaunchRequest::limits), before it allocates |
//! | [`Quota::BackEdgesPerThread`] | [`LaunchLimits::max_back_edges_per_thread`](crate::LaunchLimits) | [`DEFAULT_MAX_BACK_EDGES_PER_THREAD`](crate::limits::DEFAULT_MAX_BACK_EDGES_PER_THREAD) (2²⁴) | by the kernel itself, where the launcher's kernels count their backward branches (the CUDA backend's fence): a thread that would take one more stops, and the launch answers with the quota after it ran |
//! | [`Quota::InFlightPerGuest`] | an [`InFlight::per_guest`] shared by the guest's hosts (`LaunchHost::with_in_flight`, feature `std`) | none: one host has at most one launch in flight, since [`LaunchHost::call`](crate::LaunchHost::call) returns when its kernel has finished | by the host, after every other check, just before the launcher |
//! | [`Quota::InFlightPerDevice`] | an [`InFlight::per_device`] shared by every host on the device | none | as above |
//!
//! A launch refused for a quota reaches no launcher and leaves nothing behind: the counts it
//! was checked against are as they were.
//!
//! ```
//! use std::sync::Arc;
//! use kernel_args::{AbiError, DryRunLauncher, InFlight, LaunchCall, LaunchHost, LaunchLimits};
//!
//! // At most 2^20 threads a launch, and (with std) two launches at a time on the device.
//! let device = Arc::new(InFlight::per_device(2));
//! let limits = LaunchLimits { max_threads_per_launch: 1 << 20, ..LaunchLimits::DEFAULT };
//! let host = LaunchHost::new(DryRunLauncher::new()).with_limits(limits);
//! # #[cfg(feature = "std")]
//! let host = host.with_in_flight(device.clone());
//! let mut host = host;
//! # #[cfg(feature = "std")]
//! # assert_eq!(Arc::strong_count(&device), 2, "the host holds the count");
//!
//! let mut memory = vec![0u8; 64];
//! let call = LaunchCall::new(1, [4097, 1, 1], [256, 1, 1]);
//! assert_eq!(host.call(Some(&mut memory), &call), AbiError::QuotaExceeded.code());
//! assert_eq!(
//!     host.last_error().unwrap().to_string(),
//!     "QuotaExceeded -6: threads per launch (grid × block) would be 1048832, the quota is 1048576"
//! );
//! assert_eq!(device.in_flight(), 0);
//! ```

use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::checks::{LaunchLimits, LaunchShape};

/// A host resource a guest's launches are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Quota {
    /// Threads in one launch: `grid.x * grid.y * grid.z * block.x * block.y * block.z`.
    ThreadsPerLaunch,
    /// Bytes of device memory one launch's windows are copied into (staged mode).
    StagingBytes,
    /// Launches of one guest running at once, over every host the guest has.
    InFlightPerGuest,
    /// Launches running at once on one device, over every guest.
    InFlightPerDevice,
    /// Milliseconds one launch may run: the device's deadline (a CUDA host's
    /// `CudaOptions::launch_deadline`). Not checked before dispatch, and it stops nothing (CUDA
    /// cannot stop a running kernel): a launch that ended past its deadline is refused after it
    /// ran to its end, with `requested` the milliseconds it took.
    LaunchTime,
    /// Backward branches (loop iterations) one thread of a fenced kernel takes: its budget.
    /// Not checked before dispatch: a thread that would take one past the budget stops there
    /// (without a fault; the other threads run on), and the launch is refused after it ran,
    /// with `requested` the budget plus one (the branch the thread did not take).
    BackEdgesPerThread,
}

impl Quota {
    /// The name used in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Quota::ThreadsPerLaunch => "threads per launch (grid × block)",
            Quota::StagingBytes => "staging bytes per launch",
            Quota::InFlightPerGuest => "launches in flight for this guest",
            Quota::InFlightPerDevice => "launches in flight on this device",
            Quota::LaunchTime => "milliseconds one launch runs",
            Quota::BackEdgesPerThread => "backward branches (loop iterations) one thread takes",
        }
    }
}

impl fmt::Display for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A launch refused for a quota: which, what the launch would have taken, and the limit.
/// Maps to [`AbiError::QuotaExceeded`](crate::AbiError::QuotaExceeded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuotaError {
    /// The quota.
    pub quota: Quota,
    /// What the launch would have taken (for an in-flight quota, the count with it).
    pub requested: u64,
    /// The most the quota allows.
    pub limit: u64,
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} would be {}, the quota is {}", self.quota, self.requested, self.limit)
    }
}

impl core::error::Error for QuotaError {}

/// Refuses a launch of more threads than `limits.max_threads_per_launch`. The product cannot
/// overflow: a checked shape has at most 2³¹ × 2¹⁶ × 2¹⁶ blocks of 2¹⁰ threads, under 2⁷⁴,
/// and the product saturates at `u64::MAX` past 2⁶⁴, which every quota refuses.
pub fn check_threads_per_launch(shape: &LaunchShape, limits: &LaunchLimits) -> Result<u64, QuotaError> {
    let threads = shape.grid.iter().chain(&shape.block).fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
    if threads > limits.max_threads_per_launch {
        return Err(QuotaError {
            quota: Quota::ThreadsPerLaunch,
            requested: threads,
            limit: limits.max_threads_per_launch,
        });
    }
    Ok(threads)
}

/// A count of launches in flight, shared (in an `Arc`, or a `static`) by the hosts it covers:
/// one guest's ([`InFlight::per_guest`]) or one device's ([`InFlight::per_device`]). A host
/// given one (`LaunchHost::with_in_flight`, feature `std`) takes a place
/// just before its launcher runs and gives it back when the launcher returns, and refuses the
/// launch with [`QuotaError`] when every place is taken; it never waits.
#[derive(Debug)]
pub struct InFlight {
    quota: Quota,
    max: u32,
    now: AtomicU32,
}

impl InFlight {
    /// At most `max` launches at once of the guest whose hosts share it.
    pub const fn per_guest(max: u32) -> InFlight {
        InFlight { quota: Quota::InFlightPerGuest, max, now: AtomicU32::new(0) }
    }

    /// At most `max` launches at once on the device whose hosts share it.
    pub const fn per_device(max: u32) -> InFlight {
        InFlight { quota: Quota::InFlightPerDevice, max, now: AtomicU32::new(0) }
    }

    /// Which quota this count is.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// The most launches it lets run at once.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// Launches running now.
    pub fn in_flight(&self) -> u32 {
        self.now.load(Ordering::Acquire)
    }

    /// A place for one launch, given back when the slot is dropped; refused when all `max`
    /// are taken.
    pub fn acquire(&self) -> Result<InFlightSlot<'_>, QuotaError> {
        InFlightSlot::take(&self.now, self.max, self.quota)
    }
}

/// One launch's place in a count of launches in flight, given back on drop.
#[derive(Debug)]
#[must_use = "the place is given back when the slot is dropped"]
pub struct InFlightSlot<'a> {
    now: &'a AtomicU32,
}

impl<'a> InFlightSlot<'a> {
    /// A place in the count `now` of launches in flight for `quota`, at most `max`: what
    /// [`InFlight::acquire`] does, for a count kept elsewhere (the C API's `kargs_in_flight`,
    /// which the C host owns). Refused, with `now` unchanged, when `max` are taken.
    pub fn take(now: &'a AtomicU32, max: u32, quota: Quota) -> Result<InFlightSlot<'a>, QuotaError> {
        now.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_add(1).filter(|_| n < max))
            .map(|_| InFlightSlot { now })
            .map_err(|n| QuotaError {
                quota,
                requested: u64::from(n).saturating_add(1),
                limit: u64::from(max),
            })
    }
}

impl Drop for InFlightSlot<'_> {
    fn drop(&mut self) {
        self.now.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(grid: [u32; 3], block: [u32; 3]) -> LaunchShape {
        LaunchShape { grid, block, shared_mem_bytes: 0 }
    }

    #[test]
    fn threads_per_launch_at_the_limit_and_one_past() {
        let limits = LaunchLimits { max_threads_per_launch: 1024 * 1024, ..LaunchLimits::DEFAULT };
        assert_eq!(check_threads_per_launch(&shape([1024, 1, 1], [1024, 1, 1]), &limits), Ok(1 << 20));
        assert_eq!(check_threads_per_launch(&shape([32, 32, 1], [32, 32, 1]), &limits), Ok(1 << 20));
        let past = check_threads_per_launch(&shape([1025, 1, 1], [1024, 1, 1]), &limits).unwrap_err();
        assert_eq!(
            past,
            QuotaError { quota: Quota::ThreadsPerLaunch, requested: 1025 * 1024, limit: 1 << 20 }
        );
        assert_eq!(
            past.to_string(),
            "threads per launch (grid × block) would be 1049600, the quota is 1048576"
        );
    }

    #[test]
    fn the_largest_shape_saturates_and_is_refused_by_the_default() {
        let largest = shape([(1 << 31) - 1, 65_535, 65_535], [1024, 1, 1]);
        let e = check_threads_per_launch(&largest, &LaunchLimits::DEFAULT).unwrap_err();
        assert_eq!(e.requested, u64::MAX, "saturated");
        assert_eq!(e.limit, 1 << 32);
        let all = LaunchLimits { max_threads_per_launch: u64::MAX, ..LaunchLimits::DEFAULT };
        assert_eq!(check_threads_per_launch(&largest, &all), Ok(u64::MAX));
        // The default's edge: 2^32 threads exactly.
        assert_eq!(
            check_threads_per_launch(&shape([1 << 22, 1, 1], [1024, 1, 1]), &LaunchLimits::DEFAULT),
            Ok(1 << 32)
        );
        assert!(
            check_threads_per_launch(&shape([(1 << 22) + 1, 1, 1], [1024, 1, 1]), &LaunchLimits::DEFAULT)
                .is_err()
        );
    }

    #[test]
    fn in_flight_places_are_taken_up_to_the_limit_and_given_back_on_drop() {
        let count = InFlight::per_device(2);
        let a = count.acquire().unwrap();
        let b = count.acquire().unwrap();
        assert_eq!(count.in_flight(), 2);
        assert_eq!(
            count.acquire().unwrap_err(),
            QuotaError { quota: Quota::InFlightPerDevice, requested: 3, limit: 2 }
        );
        assert_eq!(count.in_flight(), 2, "a refusal takes nothing");
        drop(a);
        assert_eq!(count.in_flight(), 1);
        let c = count.acquire().unwrap();
        drop((b, c));
        assert_eq!(count.in_flight(), 0);
        let none = InFlight::per_guest(0);
        assert_eq!(
            none.acquire().unwrap_err().to_string(),
            "launches in flight for this guest would be 1, the quota is 0"
        );
    }

    #[test]
    fn in_flight_counts_hold_across_threads() {
        let count = InFlight::per_guest(3);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        if let Ok(slot) = count.acquire() {
                            assert!(count.in_flight() <= 3);
                            drop(slot);
                        }
                    }
                });
            }
        });
        assert_eq!(count.in_flight(), 0);
    }
}
