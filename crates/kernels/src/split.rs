//! How many tasks a product is cut into, and where: contiguous ranges of output columns (never
//! of the reduction), only as many as keep each task well above the cost of handing
//! a task to another thread.

use std::ops::Range;

/// A task should be worth at least this much single-core time: handing one to a spinning
/// helper of the team costs a microsecond or two, and
/// splitting even a decode step's small `k_proj` over both cores of this machine paid
/// (30 SmolLM2-135M layers' products: 16 -> 10 ms a token).
const MIN_TASK_NS: f64 = 5_000.0;
/// Single-core bytes per ns a weight streams at from memory (decode's floor).
const STREAM_BYTES_PER_NS: f64 = 12.0;
/// Single-core flops per ns the tiles reach (prefill's floor).
const FLOPS_PER_NS: f64 = 80.0;
/// Column ranges start at multiples of this, so two tasks never write one cache line of a row.
const ALIGN: usize = 16;

/// The number of tasks for an `[m, k] × [n, k]ᵀ` product of weights of `row_bytes` a row on
/// `threads` threads.
pub(crate) fn tasks(m: usize, n: usize, k: usize, row_bytes: usize, threads: usize) -> usize {
    let bytes = (n * row_bytes) as f64;
    let flops = 2.0 * (m * n * k) as f64;
    let ns = bytes / STREAM_BYTES_PER_NS + flops / FLOPS_PER_NS;
    // Decode streams the weights once: one task per thread. Prefill is compute: a few per
    // thread, so a thread that got descheduled does not hold the others up.
    let most = if m <= 8 { threads } else { 4 * threads };
    let worth = (ns / MIN_TASK_NS) as usize;
    worth.min(most).min(n.div_ceil(ALIGN)).max(1)
}

/// `0..n` cut into `tasks` contiguous ranges starting at multiples of 16 (fewer if `n` is
/// small), as even as 16-column units allow: the longer ranges are spread among the shorter
/// ones (Bresenham), so the halves rayon splits the list into carry the same work.
pub(crate) fn ranges(n: usize, tasks: usize) -> Vec<Range<usize>> {
    let units = n.div_ceil(ALIGN);
    let tasks = tasks.clamp(1, units.max(1));
    let (base, extra) = (units / tasks, units % tasks);
    let mut out = Vec::with_capacity(tasks);
    let mut start = 0;
    for i in 0..tasks {
        let longer = (i + 1) * extra / tasks - i * extra / tasks;
        let end = ((start / ALIGN + base + longer) * ALIGN).min(n);
        if end > start {
            out.push(start..end);
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_column_once() {
        for n in [1, 15, 16, 17, 100, 576, 49152] {
            for t in 1..9 {
                let r = ranges(n, t);
                assert!(r.len() <= t);
                assert_eq!(r[0].start, 0);
                assert_eq!(r.last().unwrap().end, n);
                assert!(r
                    .windows(2)
                    .all(|w| w[0].end == w[1].start && w[1].start % ALIGN == 0));
                // As even as 16-column units allow.
                let units: Vec<usize> = r.iter().map(|r| r.len().div_ceil(ALIGN)).collect();
                let (lo, hi) = (units.iter().min().unwrap(), units.iter().max().unwrap());
                assert!(hi - lo <= 1, "{n} {t}: {r:?}");
            }
        }
    }

    #[test]
    fn small_products_stay_on_one_thread() {
        assert_eq!(tasks(1, 64, 64, 64 * 4, 8), 1);
        assert_eq!(tasks(1, 49152, 576, 576 * 2, 2), 2);
        assert!(tasks(256, 1536, 576, 576 * 4, 2) > 2);
    }
}
