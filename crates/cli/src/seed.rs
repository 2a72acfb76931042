//! The run's seed when the user gives none.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

/// A seed from the process's random hasher keys (drawn from the OS), the time and the process
/// id, cut to 53 bits so that it prints and parses exactly everywhere (JSON readers that use
/// doubles, a pipeline's `seed=` argument).
pub fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.finish() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_seeds_fit_in_53_bits_and_differ() {
        let seeds: Vec<u64> = (0..8).map(|_| random_seed()).collect();
        assert!(seeds.iter().all(|&s| s < 1 << 53));
        assert!(seeds.windows(2).any(|w| w[0] != w[1]), "{seeds:?}");
    }
}
