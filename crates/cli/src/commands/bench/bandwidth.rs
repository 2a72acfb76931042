//! The machine's memory read bandwidth, measured: the floor a memory-bound decode step is
//! compared with (every weight read once per token).
//!
//! A buffer far larger than the caches (256 MiB) is summed by `threads` threads, each over
//! its own contiguous share, five times; the best pass counts (the others lost time to
//! whatever else ran). Summing `u64`s with wrapping adds keeps the loop at load speed and
//! lets the compiler vectorize it, and the sum is used so that the reads cannot be elided.

use std::time::Instant;

/// Bytes read per pass.
const BUFFER_BYTES: usize = 256 << 20;
/// Passes; the fastest is reported.
const PASSES: usize = 5;

/// Read bandwidth in bytes per second with `threads` threads (at least one).
pub fn read_bandwidth(threads: usize) -> f64 {
    let threads = threads.max(1);
    let words = BUFFER_BYTES / 8;
    let buffer: Vec<u64> = (0..words as u64).collect();
    let share = words.div_ceil(threads);
    let mut best = f64::INFINITY;
    let mut checksum = 0u64;
    for _ in 0..PASSES {
        let t = Instant::now();
        let sum = std::thread::scope(|s| {
            let handles: Vec<_> = buffer
                .chunks(share)
                .map(|part| s.spawn(move || part.iter().fold(0u64, |a, &x| a.wrapping_add(x))))
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
    fn bandwidth_is_positive_and_rss_is_read_on_linux() {
        assert!(super::read_bandwidth(1) > 1e8);
        if cfg!(target_os = "linux") {
            assert!(super::peak_rss().unwrap() > 1 << 20);
        }
    }
}
