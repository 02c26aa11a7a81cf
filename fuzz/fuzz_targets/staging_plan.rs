//! `staging_plan`: the CUDA backend's plan of the device arena for a staged launch.
//!
//! Where the device cannot read pageable host memory, pointer windows are copied into one
//! device buffer (the arena) and back; windows that overlap or touch must share one region of
//! it, or the copy back
//! could overwrite one argument's results with another's stale bytes. The launcher copies each
//! region `[start, end)` from the host pointer of the window that starts at `start`, so a
//! region that reached past its windows would copy bytes outside the checked windows.
//!
//! For arbitrary windows (small ones that overlap often, and raw `u32` extremes): every window
//! lies in its region at its offset; regions are sorted, disjoint and do not touch; each region
//! starts where one of its windows starts and ends where one ends, and its windows cover it
//! without a gap, so it is exactly a connected part of the windows' union; and in the arena every
//! window lies inside it, aligned modulo `STAGING_ALIGN` as in guest memory, with no two regions
//! overlapping.
#![no_main]

use arbitrary::Arbitrary;
use kernel_args_core::GuestRange;
use kernel_args_cuda::staging::{STAGING_ALIGN, StagingPlan};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Window {
    Small { guest_offset: u8, len: u8 },
    Raw { guest_offset: u32, len: u32 },
}

fuzz_target!(|windows: Vec<Window>| {
    let windows: Vec<GuestRange> = windows
        .iter()
        .map(|w| match *w {
            Window::Small { guest_offset, len } => {
                GuestRange { guest_offset: u32::from(guest_offset), len: u32::from(len % 64) }
            }
            Window::Raw { guest_offset, len } => GuestRange { guest_offset, len },
        })
        .collect();
    let plan = StagingPlan::new(&windows);
    let regions = plan.regions();
    assert_eq!(plan.placements().len(), windows.len());
    assert_eq!(regions.is_empty(), windows.is_empty());

    let mut members: Vec<Vec<GuestRange>> = vec![Vec::new(); regions.len()];
    for (i, (w, &(r, offset))) in windows.iter().zip(plan.placements()).enumerate() {
        let (start, end) = *regions.get(r).unwrap_or_else(|| panic!("window {i}: no region {r}"));
        assert_eq!(start + offset, u64::from(w.guest_offset), "window {i} misplaced");
        assert!(w.end() <= end, "window {i} {w:?} ends past its region {r} [{start}, {end})");
        members[r].push(*w);
    }
    for pair in regions.windows(2) {
        assert!(pair[0].1 < pair[1].0, "regions {pair:?} overlap or touch");
    }
    for (r, (&(start, end), windows)) in regions.iter().zip(&mut members).enumerate() {
        assert!(!windows.is_empty(), "region {r} holds no window");
        windows.sort_by_key(|w| w.guest_offset);
        assert_eq!(u64::from(windows[0].guest_offset), start, "region {r} starts before its windows");
        let mut covered = start;
        for w in windows.iter() {
            assert!(u64::from(w.guest_offset) <= covered, "region {r} has a gap at {covered}");
            covered = covered.max(w.end());
        }
        assert_eq!(covered, end, "region {r} reaches past its windows");
    }
    // The arena: each window at its region's place plus its offset, aligned as in guest memory,
    // inside the arena; regions in order, never overlapping.
    for (i, (w, &(r, offset))) in windows.iter().zip(plan.placements()).enumerate() {
        let at = plan.in_arena(i).unwrap_or_else(|| panic!("window {i}: no place in the arena"));
        assert_eq!(at, plan.region_at(r) + offset, "window {i}");
        assert_eq!(at % STAGING_ALIGN, u64::from(w.guest_offset) % STAGING_ALIGN, "window {i} misaligned");
        assert!(at + u64::from(w.len) <= plan.arena_len(), "window {i} past the arena");
    }
    for (r, pair) in regions.windows(2).enumerate() {
        let end = plan.region_at(r) + (pair[0].1 - pair[0].0);
        assert!(end <= plan.region_at(r + 1), "regions {r} and {} overlap in the arena", r + 1);
    }
});
