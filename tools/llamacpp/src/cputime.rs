//! This process's CPU time (user + system, all threads) from `/proc/self/stat`: a figure that a
//! shared, loaded machine disturbs far less than wall-clock time (for one thread it is close
//! to the wall time the same work takes on an idle core; with more threads, spin-waiting at
//! ggml's barriers counts too).

/// Linux's `USER_HZ`: the unit of the utime/stime fields (100 on every mainstream kernel).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds used so far by this process, or `None` off Linux / if the file is odd.
pub fn process_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is parenthesised and may hold spaces: split after its `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_advances_while_this_thread_computes() {
        let Some(start) = process_seconds() else {
            return; // not Linux: nothing to read
        };
        // Busy-work until the counter moves (it ticks every 10 ms of CPU); fields read from
        // the wrong place would never move, or move without work.
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        let mut now = start;
        while now <= start && wall.elapsed().as_secs() < 20 {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            }
            now = process_seconds().unwrap();
        }
        std::hint::black_box(x);
        assert!(
            now > start,
            "CPU time stayed at {start} s for 20 s of busy-work"
        );
        assert!(now - start <= wall.elapsed().as_secs_f64() + 0.05);
    }
}
