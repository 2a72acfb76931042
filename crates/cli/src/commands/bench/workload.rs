//! The work `sieve bench sampler` and the criterion benches (`benches/sampler.rs`) both time,
//! defined once here.
//!
//! - **Logits**: `N` values drawn from Normal(0, 2.5²) with a fixed seed (Box–Muller over
//!   [`SieveRng`]), or the user's file.
//! - **History**: a fixed 64-token history (ids spread over the vocabulary), all counted as
//!   generated tokens (`prompt_len = 0`, `step = 64`), and passed to every stage's `accept`
//!   once when the workload is set up, so that penalties and n-gram masks have work to do.
//! - **One token**, two ways:
//!   - [`SamplerWorkload::step`]: hand the logits vector over to the reused [`Candidates`]
//!     ([`Candidates::load_owned`], one read that takes the block bounds and checks for NaN),
//!     then [`Pipeline::sample`]. This is what `sieve generate` does with the vector the model
//!     returns; the vector is refilled from the bench logits before each step, untimed
//!     ([`SamplerWorkload::refill`]), standing for the model writing its output;
//!   - [`SamplerWorkload::step_copying`]: copy the logits in from a slice
//!     ([`Candidates::load`]), then sample: what a caller holding only a borrowed slice pays.
//!
//!   No token is accepted afterwards, so every step sees the same history.
//! - **No reset between steps**: random stages keep drawing from their stream and mirostat's μ
//!   keeps adapting, as they would over a generation; the steps stay comparable because the
//!   logits and history never change.
//! - **The floor** ([`SamplerWorkload::floor`]): [`sieve_core::math::max`] over the same
//!   logits, one pass that reads every logit: no pipeline can be faster than reading its input
//!   once.

use std::f64::consts::TAU;
use std::hint::black_box;

use sieve_core::{math, Candidates, Context, Error, Pipeline, SieveRng};

/// Seed of the generated logits.
pub const LOGITS_SEED: u64 = 0;
/// Standard deviation of the generated logits.
pub const LOGITS_STD: f64 = 2.5;
/// Length of the fixed history.
pub const HISTORY_LEN: usize = 64;

/// `n` logits drawn from Normal(0, [`LOGITS_STD`]²) by the Box–Muller transform over a
/// [`SieveRng`] seeded with `seed`: the same values on every machine.
pub fn normal_logits(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SieveRng::new(seed, "bench-logits");
    let mut out = Vec::with_capacity(n + 1);
    while out.len() < n {
        let u1 = 1.0 - rng.next_f64(); // in (0, 1], so ln(u1) is finite
        let u2 = rng.next_f64();
        let r = (-2.0 * u1.ln()).sqrt() * LOGITS_STD;
        out.push((r * (TAU * u2).cos()) as f32);
        out.push((r * (TAU * u2).sin()) as f32);
    }
    out.truncate(n);
    out
}

/// The fixed history for a vocabulary of `vocab` tokens: [`HISTORY_LEN`] ids spread over it
/// by a multiplicative hash (`vocab` must be positive).
pub fn history(vocab: usize) -> Vec<u32> {
    (0..HISTORY_LEN as u64)
        .map(|i| ((i * 2_654_435_761 + 17) % vocab as u64) as u32)
        .collect()
}

/// A pipeline with its input, ready to be timed.
pub struct SamplerWorkload {
    pipeline: Pipeline,
    logits: Vec<f32>,
    history: Vec<u32>,
    candidates: Candidates,
    /// The vector the next [`SamplerWorkload::step`] hands over.
    staged: Vec<f32>,
}

impl SamplerWorkload {
    /// Sets up `pipeline` on `logits` (which must not be empty): builds the fixed history and
    /// passes it to every stage's `accept`.
    pub fn new(mut pipeline: Pipeline, logits: Vec<f32>) -> Self {
        let history = history(logits.len().max(1));
        for &token in &history {
            pipeline.accept(token);
        }
        SamplerWorkload {
            pipeline,
            logits,
            history,
            candidates: Candidates::new(),
            staged: Vec::new(),
        }
    }

    /// The logits every step loads.
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// Untimed preparation of [`SamplerWorkload::step`]: takes the candidates' buffer back and
    /// fills it with the bench logits, as a model fills its output vector.
    pub fn refill(&mut self) {
        let mut buffer = self.candidates.take_logits();
        buffer.clear();
        buffer.extend_from_slice(&self.logits);
        self.staged = buffer;
    }

    /// One token as `sieve generate` samples it: hand the refilled vector over to the
    /// candidates and run the pipeline. Call [`SamplerWorkload::refill`] before each step.
    ///
    /// # Errors
    /// What the pipeline reports (no candidate left, a stage's own error).
    pub fn step(&mut self) -> Result<u32, Error> {
        let staged = std::mem::take(&mut self.staged);
        self.candidates.load_owned(black_box(staged));
        self.sample()
    }

    /// One token from a borrowed slice: copy the logits into the candidates and run the
    /// pipeline.
    ///
    /// # Errors
    /// What the pipeline reports (no candidate left, a stage's own error).
    pub fn step_copying(&mut self) -> Result<u32, Error> {
        self.candidates.load(black_box(&self.logits));
        self.sample()
    }

    fn sample(&mut self) -> Result<u32, Error> {
        let cx = Context {
            history: &self.history,
            prompt_len: 0,
            vocab: None,
            step: self.history.len(),
        };
        self.pipeline.sample(&mut self.candidates, &cx)
    }

    /// The floor: the maximum of the logits, one pass that reads each of them.
    pub fn floor(&self) -> f32 {
        math::max(black_box(&self.logits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_logits_are_reproducible_and_roughly_normal() {
        let a = normal_logits(20_001, 3);
        assert_eq!(a.len(), 20_001);
        assert_eq!(a, normal_logits(20_001, 3));
        assert_ne!(a[..10], normal_logits(10, 4)[..]);
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / a.len() as f64;
        // Standard errors: 2.5/√20001 ≈ 0.018 for the mean, ≈ 0.044 for the variance's root.
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!((var.sqrt() - LOGITS_STD).abs() < 0.15, "std {}", var.sqrt());
        assert!(a.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn history_stays_in_the_vocabulary() {
        let h = history(1000);
        assert_eq!(h.len(), HISTORY_LEN);
        assert!(h.iter().all(|&t| t < 1000));
        assert!(
            h.iter().collect::<std::collections::BTreeSet<_>>().len() > 50,
            "{h:?}"
        );
        assert!(history(1).iter().all(|&t| t == 0));
    }

    /// A stage that records what it sees.
    struct Probe(std::sync::Arc<std::sync::Mutex<(Vec<u32>, usize)>>);
    impl sieve_core::Sampler for Probe {
        fn apply(&mut self, c: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
            self.0.lock().unwrap().1 = cx.history.len();
            c.select(0);
            Ok(())
        }
        fn accept(&mut self, token: u32) {
            self.0.lock().unwrap().0.push(token);
        }
    }

    #[test]
    fn steps_see_the_history_and_the_floor_is_the_max() {
        let seen = std::sync::Arc::default();
        let probe = Probe(std::sync::Arc::clone(&seen));
        let pipeline = Pipeline::new(vec![("probe".to_string(), Box::new(probe))]);
        let mut w = SamplerWorkload::new(pipeline, vec![0.5, 2.0, -1.0]);
        w.refill();
        assert_eq!(w.step(), Ok(0));
        assert_eq!(w.step_copying(), Ok(0));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.0, history(3), "history accepted once, at setup");
        assert_eq!(seen.1, HISTORY_LEN);
        assert_eq!(w.floor(), 2.0);
    }
}
