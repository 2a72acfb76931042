//! `mirostat(tau, eta, m, seed)`: Mirostat v1, a selector that steers the surprise of the sampled
//! tokens toward a target `τ` bits.
//!
//! # Formula
//! State: `μ`, initially `2τ`. On each step, with `p` the probabilities of the current
//! candidates sorted descending and `p'` its `min(m, #p>0)` largest positive values:
//! ```text
//! ŝ = Σ t_i b_i / Σ t_i²,  t_i = ln((i+2)/(i+1)),  b_i = ln(p'_i / p'_{i+1}),  i = 0 … |p'|−2
//! ε̂ = ŝ − 1
//! k = ( ε̂ · 2^μ / (1 − N^(−ε̂)) )^(1/ŝ)          N = the vocabulary size
//! keep the top max(⌊k⌋, 1) candidates; draw X from their renormalized probabilities p̃
//! S = −log2 p̃(X);   μ ← μ − η (S − τ)
//! ```
//! `ŝ` is a least-squares estimate of the Zipf exponent of the distribution; `k` is the number of
//! tokens whose expected surprise under that Zipf law is `μ`.
//!
//! # Reference
//! Basu et al., *Mirostat: A Neural Text Decoding Algorithm that Directly Controls Perplexity*
//! (arXiv:2007.14966), Algorithm 1; llama.cpp `llama_sampler_mirostat` (`m = 100`, μ updated in
//! `apply`, surprise from the renormalized probability, `N = n_vocab`).
//!
//! # Edge cases and deviations
//! - μ is updated inside `apply`, right after the draw (as llama.cpp does), not in `accept`;
//!   `reset` restores `μ = 2τ` and restarts the random stream.
//! - The estimate uses only positive probabilities: masked (`-inf`) or underflowed candidates
//!   would make `b_i` infinite (llama.cpp lets them in). With fewer than two positive candidates
//!   there is nothing to estimate and the top one is kept.
//! - `ŝ`, `k` and `μ` are computed in `f64` (llama.cpp: `f32`), so `⌊k⌋` can differ from
//!   llama.cpp's only when `k` is within rounding of an integer. `1 − N^(−ε̂)` is evaluated with
//!   `expm1`, and at `ε̂ = 0` the quotient takes its limit `1/ln N` (llama.cpp gets NaN).
//! - `ŝ = 0` (a flat top) makes the exponent infinite: `k` is then 0, 1 or ∞ as the base is
//!   below, at or above 1. `k` is clamped to `[1, n]`; a NaN `k` (not reachable from valid
//!   input) keeps every candidate.
//! - The draw is `select::draw` (one uniform per step, also for a single candidate), so
//!   the token depends on the current candidate order; ties at the cut keep the lower id.
//! - If every candidate is masked the stage selects nothing and leaves μ and the random stream
//!   alone (the pipeline reports the error).

use alloc::vec::Vec;

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Seed, Stage};

use crate::select::Steering;
pub use crate::select::SteeringParams;

/// The `mirostat` stage.
#[derive(Debug, Clone)]
pub struct Mirostat {
    m: usize,
    steering: Steering,
    /// Scratch: the top positive probabilities.
    top: Vec<f32>,
}

impl Mirostat {
    /// Targets a surprise of `tau` bits with learning rate `eta`, estimating the Zipf exponent
    /// from the `m` most likely tokens, drawing from a stream seeded with `seed`.
    pub fn new(tau: f64, eta: f64, m: usize, seed: u64) -> Self {
        Mirostat {
            m,
            steering: Steering::new(tau, eta, seed, "mirostat"),
            top: Vec::new(),
        }
    }

    /// The current maximum surprise `μ` (bits).
    pub fn mu(&self) -> f64 {
        self.steering.mu()
    }
}

/// The least-squares Zipf exponent `ŝ` of probabilities sorted descending, all positive; `None`
/// with fewer than two.
fn zipf_exponent(top: &[f32]) -> Option<f64> {
    if top.len() < 2 {
        return None;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (i, pair) in top.windows(2).enumerate() {
        let t = libm::log((i as f64 + 2.0) / (i as f64 + 1.0));
        let b = libm::log(pair[0] as f64 / pair[1] as f64);
        num += t * b;
        den += t * t;
    }
    Some(num / den)
}

/// `k = (ε̂ · 2^μ / (1 − N^(−ε̂)))^(1/ŝ)` with `ε̂ = ŝ − 1`, for `N >= 2`.
fn k_for(s_hat: f64, mu: f64, n_vocab: usize) -> f64 {
    let eps = s_hat - 1.0;
    let ln_n = libm::log(n_vocab as f64);
    // 1 − N^(−ε̂) = −expm1(−ε̂ ln N); the quotient tends to 1/ln N as ε̂ → 0.
    let ratio = if eps == 0.0 {
        1.0 / ln_n
    } else {
        eps / -libm::expm1(-eps * ln_n)
    };
    libm::pow(ratio * libm::exp2(mu), 1.0 / s_hat)
}

/// `max(⌊k⌋, 1)` clamped to `n`; NaN keeps all `n`.
fn keep_count(k: f64, n: usize) -> usize {
    if k.is_nan() || k >= n as f64 {
        n
    } else if k < 1.0 {
        1
    } else {
        k as usize
    }
}

impl Sampler for Mirostat {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if !candidates.has_finite() {
            return Ok(());
        }
        let n = candidates.len();
        let n_vocab = candidates.vocab_size().max(n);
        self.top.clear();
        self.top
            .extend(candidates.softmax().iter().copied().filter(|&p| p > 0.0));
        let m = self.m.min(self.top.len());
        let desc = |a: &f32, b: &f32| b.total_cmp(a);
        if m > 0 && m < self.top.len() {
            self.top.select_nth_unstable_by(m - 1, desc);
            self.top.truncate(m);
        }
        self.top.sort_unstable_by(desc);
        let k = match zipf_exponent(&self.top) {
            Some(s_hat) => keep_count(k_for(s_hat, self.steering.mu(), n_vocab), n),
            None => 1,
        };
        candidates.keep_top(k);
        self.steering.select_and_steer(candidates);
        Ok(())
    }

    fn reset(&mut self) {
        self.steering.reset();
    }
}

/// The parameters of `mirostat`.
#[derive(Debug, Clone, Params)]
pub struct MirostatParams {
    /// `tau` and `eta`, shared with the other Mirostat stage
    #[param(flatten)]
    pub steering: SteeringParams,
    /// number of most likely tokens used to estimate the Zipf exponent
    #[param(default = 100, range = Range::closed(2.0, u32::MAX as f64))]
    pub m: usize,
    /// random seed; -1 uses the run's --seed
    pub seed: Seed,
}

impl Stage for Mirostat {
    const NAME: &'static str = "mirostat";
    const DOC: &'static str = "Mirostat v1: select a token, steering its surprise toward tau bits";
    const SELECTOR: bool = true;
    type Params = MirostatParams;
    fn new(p: MirostatParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Mirostat::new(
            p.steering.tau,
            p.steering.eta,
            p.m,
            p.seed.resolve(cx.seed),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    // p = [0.5, 0.25, 0.125, 0.125], N = 4, m = 100 (so all three ratios count):
    // t = [ln 2, ln 1.5, ln(4/3)] = [0.693147, 0.405465, 0.287682], b = [ln 2, ln 2, 0];
    // ŝ = (0.693147² + 0.405465·0.693147) / (0.693147² + 0.405465² + 0.287682²)
    //   = 0.761500 / 0.727616 = 1.046569,  ε̂ = 0.046569,
    // ε̂ / (1 − 4^(−ε̂)) = 0.046569 / 0.062510 = 0.744985.
    const P: [f32; 4] = [0.5, 0.25, 0.125, 0.125];
    const S_HAT: f64 = 1.046569;

    fn logits(ps: &[f32]) -> Vec<f32> {
        ps.iter().map(|p| p.ln()).collect()
    }

    fn step(stage: &mut Mirostat, ps: &[f32]) -> (u32, Candidates) {
        let mut c = Candidates::from_logits(&logits(ps));
        stage.apply(&mut c, &Context::default()).unwrap();
        (c.selected_id().unwrap(), c)
    }

    #[test]
    fn zipf_exponent_and_k_by_hand() {
        let s = zipf_exponent(&P).unwrap();
        assert!((s - S_HAT).abs() < 1e-5, "{s}");
        // μ = 2.2: k = (0.744985 · 2^2.2)^(1/ŝ) = 3.423023^0.955504 = 3.2402.
        assert!((k_for(s, 2.2, 4) - 3.2402).abs() < 1e-3);
        // μ = 0.5: k = (0.744985 · √2)^0.955504 = 1.0510.
        assert!((k_for(s, 0.5, 4) - 1.0510).abs() < 1e-3);
        // ŝ = 1 (ε̂ = 0) takes the limit: k = 2^μ / ln N = 8 / ln 8 = 3.8472.
        assert!((k_for(1.0, 3.0, 8) - 3.8472).abs() < 1e-3);
        // ŝ = 0 (flat top): base 2^μ/(N−1) above 1 → ∞, below 1 → 0.
        assert_eq!(k_for(0.0, 10.0, 4), f64::INFINITY);
        assert_eq!(k_for(0.0, 0.0, 4), 0.0);
        assert_eq!(zipf_exponent(&[1.0]), None);
    }

    #[test]
    fn keep_count_clamps() {
        assert_eq!(keep_count(3.24, 4), 3);
        assert_eq!(keep_count(0.2, 4), 1);
        assert_eq!(keep_count(f64::INFINITY, 4), 4);
        assert_eq!(keep_count(f64::NAN, 4), 4);
    }

    #[test]
    fn one_step_truncates_and_updates_mu_by_hand() {
        // τ = 1.1 → μ = 2.2 → k = 3.24 → keep 3: ids 0, 1 and, of the tied 0.125s, id 2.
        // Renormalized: [4/7, 2/7, 1/7]; μ' = 2.2 − 0.1·(−log2 p̃ − 1.1).
        let mut stage = Mirostat::new(1.1, 0.1, 100, 7);
        assert_eq!(stage.mu(), 2.2);
        let (token, c) = step(&mut stage, &P);
        assert_eq!(
            c.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let want = match token {
            0 => 2.229265, // S = log2(7/4) = 0.807355
            1 => 2.129265, // S = log2(7/2) = 1.807355
            2 => 2.029265, // S = log2 7 = 2.807355
            t => panic!("token {t} was cut"),
        };
        assert!(
            (stage.mu() - want).abs() < 1e-5,
            "token {token}: μ = {}",
            stage.mu()
        );
    }

    #[test]
    fn k_below_one_keeps_the_top_token_and_mu_grows_by_eta_tau() {
        // τ = 0.25 → μ = 0.5 → k = 1.05 → keep 1: S = 0, μ' = 0.5 + 0.1·0.25 = 0.525.
        let mut stage = Mirostat::new(0.25, 0.1, 100, 7);
        let (token, c) = step(&mut stage, &P);
        assert_eq!((token, c.len()), (0, 1));
        assert!((stage.mu() - 0.525).abs() < 1e-9);
    }

    #[test]
    fn flat_distributions() {
        // Uniform over 4: ŝ = 0; μ = 10 → base 1024/3 > 1 → k = ∞ → all four stay.
        let (_, c) = step(&mut Mirostat::new(5.0, 0.1, 100, 1), &[0.25; 4]);
        assert_eq!(c.len(), 4);
        // μ = 0 → base 1/3 < 1 → k = 0 → the top one, which on ties is the lowest id.
        let (token, c) = step(&mut Mirostat::new(0.0, 0.1, 100, 1), &[0.25; 4]);
        assert_eq!((token, c.len()), (0, 1));
    }

    #[test]
    fn single_and_masked_candidates() {
        // One finite candidate among masked ones: it is selected, S = 0, μ' = 10 + 0.1·5.
        let mut stage = Mirostat::new(5.0, 0.1, 100, 3);
        for _ in 0..5 {
            let mut c = Candidates::from_logits(&[f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY]);
            stage.apply(&mut c, &Context::default()).unwrap();
            assert_eq!(c.selected_id(), Some(1));
        }
        assert!((stage.mu() - (10.0 + 5.0 * 0.5)).abs() < 1e-9);
        // Nothing finite: no selection, no panic, μ untouched.
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 2]);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.selected(), None);
        assert!((stage.mu() - 12.5).abs() < 1e-9);
        let mut empty = Candidates::new();
        stage.apply(&mut empty, &Context::default()).unwrap();
    }

    #[test]
    fn masked_candidates_are_never_selected() {
        let ps = [0.4, 0.0, 0.3, 0.2, 0.1];
        let mut stage = Mirostat::new(5.0, 0.1, 100, 11);
        for _ in 0..200 {
            let (token, _) = step(&mut stage, &ps);
            assert_ne!(token, 1);
        }
    }

    fn run_tokens(stage: &mut Mirostat, steps: usize) -> Vec<u32> {
        let ps = [0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02];
        (0..steps).map(|_| step(stage, &ps).0).collect()
    }

    #[test]
    fn seeded_determinism_and_reset() {
        let mut a = Mirostat::new(3.0, 0.1, 100, 42);
        let mut b = Mirostat::new(3.0, 0.1, 100, 42);
        let first = run_tokens(&mut a, 40);
        assert_eq!(first, run_tokens(&mut b, 40));
        assert_eq!(a.mu(), b.mu());
        assert!(
            first.iter().any(|&t| t != first[0]),
            "the draw should vary: {first:?}"
        );
        a.reset();
        assert_eq!(a.mu(), 6.0);
        assert_eq!(run_tokens(&mut a, 40), first);
        let other = run_tokens(&mut Mirostat::new(3.0, 0.1, 100, 43), 40);
        assert_ne!(other, first);
    }

    #[test]
    fn registry_entry_is_a_seeded_selector() {
        let e = sieve_core::StageEntry::of::<Mirostat>();
        assert!(e.info.selector);
        let names: Vec<&str> = e.info.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["tau", "eta", "m", "seed"]);
        let args = Args::new(
            "mirostat",
            vec![
                ("tau".into(), Value::Float(3.0)),
                ("eta".into(), Value::Float(0.1)),
                ("m".into(), Value::Int(100)),
                ("seed".into(), Value::Int(-1)),
            ],
        );
        // seed = -1 takes the run's seed.
        let mut built = (e.build)(
            &args,
            &BuildContext {
                seed: 42,
                vocab: None,
            },
        )
        .unwrap();
        let mut direct = Mirostat::new(3.0, 0.1, 100, 42);
        for _ in 0..20 {
            let mut c =
                Candidates::from_logits(&logits(&[0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02]));
            built.apply(&mut c, &Context::default()).unwrap();
            assert_eq!(
                c.selected_id(),
                Some(step(&mut direct, &[0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02]).0)
            );
        }
    }
}
