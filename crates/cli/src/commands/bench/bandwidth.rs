//! The machine's memory read bandwidth, measured: the floor a memory-bound decode step is
//! compared with (every weight read once per token).
//!
//! A buffer as large as the bytes a decode step reads (at least 64 MiB) is summed by
//! `threads` threads, each over its own contiguous share, five times; the best pass counts
//! (the others lost time to whatever else ran). Each thread reads its share as four
//! interleaved streams and, on x86-64, asks for the lines `PREFETCH_BYTES` ahead of each
//! stream: on the development machine (a VM whose hardware prefetchers do little) a plain
//! sequential sum reached 22.0 GB/s on two threads and this 31.9 GB/s over 1 GiB — what the
//! decode kernels, which prefetch too, can actually get. Summing `u64`s with wrapping adds
//! keeps the loop at load speed, and the sum is used so that the reads cannot be elided.

use std::time::Instant;

/// Smallest buffer read per pass.
const MIN_BUFFER_BYTES: usize = 64 << 20;
/// Passes; the fastest is reported.
const PASSES: usize = 5;
/// Streams each thread reads side by side.
const STREAMS: usize = 4;
/// How far ahead of each stream lines are prefetched.
const PREFETCH_BYTES: usize = 2048;

/// Read bandwidth in bytes per second with `threads` threads (at least one), over a buffer
/// of `bytes` (at least `MIN_BUFFER_BYTES`).
pub fn read_bandwidth(threads: usize, bytes: usize) -> f64 {
    let threads = threads.max(1);
    let words = bytes.max(MIN_BUFFER_BYTES) / 8;
    let buffer: Vec<u64> = (0..words as u64).collect();
    let share = words.div_ceil(threads);
    let mut best = f64::INFINITY;
    let mut checksum = 0u64;
    for _ in 0..PASSES {
        let t = Instant::now();
        let sum = std::thread::scope(|s| {
            let handles: Vec<_> = buffer
                .chunks(share)
                .map(|part| s.spawn(move || sum_streams(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0u64, u64::wrapping_add)
        });
        best = best.min(t.elapsed().as_secs_f64());
        checksum = checksum.wrapping_add(sum);
    }
    std::hint::black_box(checksum);
    (words * 8) as f64 / best
}

/// The wrapping sum of `words`, read as [`STREAMS`] equal streams a cache line at a time
/// (the few words left over at the end are added after).
fn sum_streams(words: &[u64]) -> u64 {
    const LINE: usize = 8;
    let len = words.len() / STREAMS / LINE * LINE;
    let mut acc = [0u64; LINE];
    for i in (0..len).step_by(LINE) {
        for stream in 0..STREAMS {
            let at = stream * len + i;
            prefetch(words, at + PREFETCH_BYTES / 8);
            for (a, &w) in acc.iter_mut().zip(&words[at..at + LINE]) {
                *a = a.wrapping_add(w);
            }
        }
    }
    let tail = words[STREAMS * len..].iter();
    acc.iter().chain(tail).fold(0u64, |a, &w| a.wrapping_add(w))
}

/// Asks for the cache line of `words[at]` (nothing past the end, or off x86-64).
#[inline(always)]
fn prefetch(words: &[u64], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(w) = words.get(at) {
        // SAFETY: SSE is part of x86-64; a prefetch reads nothing and the address is inside
        // `words`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(
                std::ptr::from_ref(w).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (words, at);
}

/// The peak resident set size of this process in bytes (`VmHWM` of `/proc/self/status`), or
/// `None` where that file does not exist.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_streams_sum_every_word() {
        for len in [0, 7, 32, 33, 1000, 4099] {
            let words: Vec<u64> = (0..len).collect();
            assert_eq!(
                super::sum_streams(&words),
                len * len.saturating_sub(1) / 2,
                "{len}"
            );
        }
    }

    #[test]
    fn bandwidth_is_positive_and_rss_is_read_on_linux() {
        assert!(super::read_bandwidth(1, 0) > 1e8);
        if cfg!(target_os = "linux") {
            assert!(super::peak_rss().unwrap() > 1 << 20);
        }
    }
}
