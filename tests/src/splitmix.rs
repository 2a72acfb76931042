//! SplitMix64: a tiny deterministic generator for the fixtures.
//!
//! The fixtures must not depend on the code under test, so they do not use
//! [`sieve_core::SieveRng`]. SplitMix64 (Steele, Lea, Flood, *Fast Splittable Pseudorandom
//! Number Generators*, 2014) is a few lines, easy to reproduce in another language when a
//! snapshot is checked by hand.

/// The SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in `[0, 1)` from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A draw in `0..n` (multiply-high; the bias is below `n / 2^64`). `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // Reference values of SplitMix64 seeded with 0 (as printed by the authors' C code).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn draws_stay_in_range() {
        let mut g = SplitMix64::new(7);
        for _ in 0..1000 {
            assert!((0.0..1.0).contains(&g.next_f64()));
            assert!(g.below(3) < 3);
        }
    }
}
