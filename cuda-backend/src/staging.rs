//! The staging plan: where in one device arena a staged launch puts its pointer windows.
//!
//! Where the device cannot read pageable host memory, each pointer window is copied into
//! device memory before the launch and back after it. Windows may overlap (a guest may pass
//! the same buffer as input and output, or two views of one array). Copying each window into
//! its own buffer would break that aliasing: the kernel's writes through one argument would
//! not be seen through the other, and copying back would let one window's stale bytes
//! overwrite the other's results, depending on the order of the copies. So windows that
//! overlap or touch are merged into one region, staged as one piece, and each argument gets
//! the address of its window inside its region: arguments alias on the device exactly as they
//! do in guest memory.
//!
//! Every region of a launch lies in one device buffer, the arena, one after the other: the
//! arena is the launch's fence in staged mode (`crate::fence`), the one address range a fenced
//! kernel's accesses are clamped into.
//!
//! This module only plans (no driver, no allocation beyond the plan's vectors), so it is
//! tested without a GPU and under Miri.
//!
//! For example, a = `[0, 64)`, b = `[64, 128)` and out = a (in place) are one region,
//! `[0, 128)`; a is placed at 0 in it, b at 64, out at 0 (the `in_place_and_touching` test).
//!
//! A region is copied into the arena at its start's distance past a [`STAGING_ALIGN`] boundary
//! of the arena ([`StagingPlan::region_at`]), and the arena starts on such a boundary, so every
//! window's device address is congruent to its guest offset modulo [`STAGING_ALIGN`]: a window
//! aligned for its elements in guest memory stays aligned on the device, however windows merge
//! (`[4, 8)` of `f32` and `[8, 24)` of `f64` touch and share a region; the `f64`s stay 8-aligned).

use kernel_args_core::GuestRange;

/// A staged window's device address is congruent to its guest offset modulo this: what
/// `cuMemAlloc` aligns every buffer to.
pub const STAGING_ALIGN: u64 = 256;

/// The arena of a staged launch and where each pointer window lies in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagingPlan {
    /// `[start, end)` guest offsets of each region, in increasing order, disjoint and not
    /// touching.
    regions: Vec<(u64, u64)>,
    /// For each window, in the order given: its region's index and its offset in the region.
    placements: Vec<(usize, u64)>,
    /// Where each region's first byte lies in the arena.
    region_at: Vec<u64>,
    /// The bytes at the arena's start that no window takes (a fenced module's variables).
    reserved: u64,
}

impl StagingPlan {
    /// Plans the regions for `windows` (the pointer arguments' windows, in argument order).
    pub fn new(windows: &[GuestRange]) -> StagingPlan {
        StagingPlan::after(0, windows)
    }

    /// Plans the regions for `windows` after the arena's first `reserved` bytes, which no
    /// window takes (a fenced module's variables, `crate::fence::FencedModule::variables`):
    /// the first region starts at the first [`STAGING_ALIGN`] boundary at or after them.
    pub fn after(reserved: u64, windows: &[GuestRange]) -> StagingPlan {
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| windows.get(i).map(|w| w.guest_offset));
        let mut regions: Vec<(u64, u64)> = Vec::new();
        let mut region_of = vec![0usize; windows.len()];
        for &i in &order {
            let Some(w) = windows.get(i) else { continue };
            let (start, end) = (u64::from(w.guest_offset), w.end());
            match regions.last_mut() {
                // Sorted by start, so a window overlaps or touches the last region iff it
                // starts at or before the region's end.
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => regions.push((start, end)),
            }
            if let Some(r) = region_of.get_mut(i) {
                *r = regions.len().saturating_sub(1);
            }
        }
        let placements = windows
            .iter()
            .zip(&region_of)
            .map(|(w, &r)| {
                let start = regions.get(r).map_or(0, |region| region.0);
                (r, u64::from(w.guest_offset).saturating_sub(start))
            })
            .collect();
        // Each region from the next STAGING_ALIGN boundary after the one before, plus its
        // start's distance past a boundary.
        let mut region_at = Vec::with_capacity(regions.len());
        let mut free = reserved.next_multiple_of(STAGING_ALIGN);
        for &(start, end) in &regions {
            let at = free.saturating_add(start % STAGING_ALIGN);
            region_at.push(at);
            free = at.saturating_add(end.saturating_sub(start)).next_multiple_of(STAGING_ALIGN);
        }
        StagingPlan { regions, placements, region_at, reserved }
    }

    /// The regions' `[start, end)` guest offsets, in increasing order.
    pub fn regions(&self) -> &[(u64, u64)] {
        &self.regions
    }

    /// For each window, in the order given: its region's index and its byte offset inside the
    /// region (what the tests and the `staging_plan` fuzz target hold the plan to; the launcher
    /// places windows through [`in_arena`](Self::in_arena)).
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub fn placements(&self) -> &[(usize, u64)] {
        &self.placements
    }

    /// Where region `r`'s first byte lies in the arena (0 for a region that does not exist):
    /// congruent to the region's start modulo [`STAGING_ALIGN`].
    pub fn region_at(&self, r: usize) -> u64 {
        self.region_at.get(r).copied().unwrap_or(0)
    }

    /// The bytes the arena needs: up to the last region's end, and at least the reserved
    /// bytes (0 without either).
    pub fn arena_len(&self) -> u64 {
        match (self.regions.last(), self.region_at.last()) {
            (Some(&(start, end)), Some(&at)) => at.saturating_add(end.saturating_sub(start)),
            _ => self.reserved,
        }
    }

    /// Window `i`'s offset in the arena; `None` past the last window.
    pub fn in_arena(&self, i: usize) -> Option<u64> {
        let &(r, offset) = self.placements.get(i)?;
        Some(self.region_at(r).saturating_add(offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(guest_offset: u32, len: u32) -> GuestRange {
        GuestRange { guest_offset, len }
    }

    /// Every window lies inside its region at its offset, keeps its alignment in the arena and
    /// lies inside it; regions neither overlap nor touch in guest memory, nor overlap in the
    /// arena.
    fn check_invariants(windows: &[GuestRange], plan: &StagingPlan) {
        for (i, (window, &(r, offset))) in windows.iter().zip(plan.placements()).enumerate() {
            let (start, end) = plan.regions()[r];
            assert_eq!(start + offset, u64::from(window.guest_offset));
            assert!(window.end() <= end, "{window:?} outside region {r}");
            let at = plan.in_arena(i).unwrap();
            assert_eq!(at, plan.region_at(r) + offset);
            assert_eq!(at % STAGING_ALIGN, u64::from(window.guest_offset) % STAGING_ALIGN, "{window:?}");
            assert!(at + u64::from(window.len) <= plan.arena_len(), "{window:?} past the arena");
        }
        for (r, pair) in plan.regions().windows(2).enumerate() {
            assert!(pair[0].1 < pair[1].0, "regions {pair:?} overlap or touch");
            let end_in_arena = plan.region_at(r) + (pair[0].1 - pair[0].0);
            assert!(end_in_arena <= plan.region_at(r + 1), "regions {r} and {} overlap in the arena", r + 1);
        }
    }

    #[test]
    fn in_place_and_touching() {
        let windows = [w(0, 64), w(64, 64), w(0, 64)];
        let plan = StagingPlan::new(&windows);
        assert_eq!(plan.regions(), &[(0, 128)]);
        assert_eq!(plan.placements(), &[(0, 0), (0, 64), (0, 0)]);
    }

    #[test]
    fn merged_windows_keep_their_alignment() {
        // [4, 8) of f32 and [8, 24) of f64 touch: one region from 4, copied 4 bytes into its
        // buffer, so the f64s are at buffer + 8, 8-aligned, as in guest memory.
        let windows = [w(4, 4), w(8, 16)];
        let plan = StagingPlan::new(&windows);
        assert_eq!(plan.regions(), &[(4, 24)]);
        assert_eq!((plan.region_at(0), plan.arena_len()), (4, 24));
        assert_eq!((plan.in_arena(0), plan.in_arena(1)), (Some(4), Some(8)));
        assert_eq!(plan.in_arena(2), None);
        // [300, 308) at 44 in the arena; [1000, 1004) from the next boundary, 256, plus 232.
        let plan = StagingPlan::new(&[w(300, 8), w(1000, 4)]);
        assert_eq!((plan.in_arena(0), plan.in_arena(1)), (Some(44), Some(488)));
        assert_eq!(plan.arena_len(), 492);
        check_invariants(&[w(300, 8), w(1000, 4)], &plan);
    }

    #[test]
    fn disjoint_windows_get_their_own_regions() {
        let windows = [w(256, 16), w(0, 16), w(64, 0)];
        let plan = StagingPlan::new(&windows);
        assert_eq!(plan.regions(), &[(0, 16), (64, 64), (256, 272)]);
        assert_eq!(plan.placements(), &[(2, 0), (0, 0), (1, 0)]);
        check_invariants(&windows, &plan);
    }

    #[test]
    fn overlapping_nested_touching_and_duplicate_windows_merge() {
        let windows =
            [w(100, 50), w(0, 40), w(40, 10), w(120, 10), w(100, 50), w(10, 5), w(200, 8), w(150, 0)];
        let plan = StagingPlan::new(&windows);
        // [0,40) and [40,50) touch; [100,150) holds the nested and duplicate windows and the
        // zero-length window at its end.
        assert_eq!(plan.regions(), &[(0, 50), (100, 150), (200, 208)]);
        assert_eq!(plan.placements(), &[(1, 0), (0, 0), (0, 40), (1, 20), (1, 0), (0, 10), (2, 0), (1, 50)]);
        check_invariants(&windows, &plan);
    }

    #[test]
    fn reserved_bytes_come_first_and_windows_keep_their_alignment() {
        let windows = [w(4, 4), w(300, 8)];
        let plan = StagingPlan::after(16, &windows);
        // After the 16 reserved bytes: the next boundary, 256, plus 4; then 512 plus 44.
        assert_eq!((plan.in_arena(0), plan.in_arena(1)), (Some(260), Some(556)));
        assert_eq!(plan.arena_len(), 564);
        check_invariants(&windows, &plan);
        // No window: the reserved bytes alone.
        assert_eq!(StagingPlan::after(16, &[]).arena_len(), 16);
        assert_eq!(StagingPlan::after(0, &windows), StagingPlan::new(&windows));
    }

    #[test]
    fn extremes_and_empty() {
        assert_eq!(StagingPlan::new(&[]).regions(), &[] as &[(u64, u64)]);
        assert_eq!(StagingPlan::new(&[]).arena_len(), 0);
        let windows = [w(u32::MAX, u32::MAX), w(0, u32::MAX)];
        let plan = StagingPlan::new(&windows);
        assert_eq!(plan.regions(), &[(0, 2 * u64::from(u32::MAX))]);
        check_invariants(&windows, &plan);
    }

    #[test]
    fn invariants_hold_for_many_layouts() {
        // A small deterministic sweep: every layout of three windows over a 6-byte memory
        // (3 bytes under Miri, which is slow).
        let size: u32 = if cfg!(miri) { 3 } else { 6 };
        let all: Vec<GuestRange> =
            (0..=size).flat_map(|start| (0..=size - start).map(move |len| w(start, len))).collect();
        for a in &all {
            for b in &all {
                for c in &all {
                    let windows = [*a, *b, *c];
                    check_invariants(&windows, &StagingPlan::new(&windows));
                }
            }
        }
    }
}
