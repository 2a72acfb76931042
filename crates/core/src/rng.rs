//! A seeded, portable random generator.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// The random generator of every random stage: ChaCha8 (from `rand_chacha`), whose output is
/// specified bit for bit, so the same seed gives the same draws on every machine and build.
///
/// Each stage gets its own stream, derived from the stage name, so that `xtc` and `dist`
/// seeded alike do not draw the same numbers.
#[derive(Debug, Clone)]
pub struct SieveRng {
    seed: u64,
    stream: u64,
    inner: ChaCha8Rng,
}

/// FNV-1a, 64-bit: a stable hash of the stage name to pick its stream.
fn stream_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl SieveRng {
    /// A generator for stage `stage` seeded with `seed`.
    pub fn new(seed: u64, stage: &str) -> Self {
        let stream = stream_of(stage);
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream(stream);
        SieveRng {
            seed,
            stream,
            inner,
        }
    }
    /// Restarts the sequence from the seed (what `Sampler::reset` does).
    pub fn reset(&mut self) {
        self.inner = ChaCha8Rng::seed_from_u64(self.seed);
        self.inner.set_stream(self.stream);
    }
    /// The seed this generator started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// A uniform draw in `[0, 1)` with 53 random bits (the top bits of one `u64`).
    pub fn next_f64(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// A uniform draw in `[0, 1)` with 24 random bits (the top bits of one `u32`).
    pub fn next_f32(&mut self) -> f32 {
        (self.inner.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
    }
    /// A raw 64-bit draw.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_and_reset_replays() {
        let mut a = SieveRng::new(42, "dist");
        let mut b = SieveRng::new(42, "dist");
        let first: [f64; 4] = core::array::from_fn(|_| a.next_f64());
        let second: [f64; 4] = core::array::from_fn(|_| b.next_f64());
        assert_eq!(first, second);
        a.reset();
        assert_eq!(a.next_f64(), first[0]);
        assert!(first.iter().all(|x| (0.0..1.0).contains(x)));
    }

    #[test]
    fn stages_draw_from_different_streams() {
        let mut a = SieveRng::new(42, "dist");
        let mut b = SieveRng::new(42, "xtc");
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn draws_are_pinned() {
        const PINNED: u64 = 672_781_725_832_014_280;
        // ChaCha8 is specified bit for bit; this value must never change, or seeded runs
        // would stop reproducing across versions.
        let mut rng = SieveRng::new(42, "dist");
        let x = rng.next_u64();
        assert_eq!(x, PINNED);
    }
}
