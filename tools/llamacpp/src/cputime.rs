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
