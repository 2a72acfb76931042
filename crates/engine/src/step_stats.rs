//! What one decoding step looked like, measured on the raw model distribution (before any
//! stage) and on what the pipeline left: the numbers `sieve compare` aggregates.
//!
//! With raw logits `l` over the vocabulary, `log Z = log Σ_i e^{l_i}` and `p_i = e^{l_i} / Z`:
//! - the chosen token's log-probability under the raw model is `l_t − log Z`;
//! - the raw distribution's entropy is `H = −Σ p_i ln p_i = log Z − Σ_i p_i l_i` (nats).
//!
//! NaN logits count as `-inf` (probability 0) and `+inf` as `f32::MAX`, as the candidates
//! read them. Sums run in `f64` in index order, so the numbers do not depend on anything but
//! the logits.

use sieve_core::math::sanitize;
use sieve_core::Candidates;

/// The statistics of one generated token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepStats {
    /// `ln p(token)` under the raw model distribution (before the pipeline).
    pub logprob: f64,
    /// Entropy of the raw model distribution, in nats.
    pub entropy: f64,
    /// Candidates with a finite logit when the pipeline had chosen: 1 when truncation left a
    /// single one; a selector that does not truncate (`greedy`, `dist`) leaves more.
    pub survivors: usize,
}

impl StepStats {
    /// The statistics of choosing `token` after the raw `logits`, with `candidates` as the
    /// pipeline left them.
    pub fn of(logits: &[f32], token: u32, candidates: &Candidates) -> Self {
        let (logprob, entropy) = raw_logprob_and_entropy(logits, token);
        let survivors = candidates
            .raw_logits()
            .iter()
            .filter(|&&x| x > f32::NEG_INFINITY)
            .count();
        StepStats {
            logprob,
            entropy,
            survivors,
        }
    }
}

/// `(ln p(token), H)` of the raw distribution given by `logits`; `(-inf, 0)` when no logit is
/// finite.
pub fn raw_logprob_and_entropy(logits: &[f32], token: u32) -> (f64, f64) {
    let max = logits
        .iter()
        .map(|&x| sanitize(x))
        .fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return (f64::NEG_INFINITY, 0.0);
    }
    let max = f64::from(max);
    let (mut z, mut weighted) = (0.0f64, 0.0f64);
    for &x in logits {
        let l = f64::from(sanitize(x));
        if l == f64::NEG_INFINITY {
            continue;
        }
        let w = (l - max).exp();
        z += w;
        weighted += w * (l - max);
    }
    let log_z = z.ln();
    let entropy = (log_z - weighted / z).max(0.0);
    let chosen = logits
        .get(token as usize)
        .map_or(f64::NEG_INFINITY, |&x| f64::from(sanitize(x)));
    (chosen - max - log_z, entropy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_and_by_hand() {
        // Four equal logits: p = 1/4 each, H = ln 4.
        let (lp, h) = raw_logprob_and_entropy(&[2.0; 4], 1);
        assert!((lp - 0.25f64.ln()).abs() < 1e-12, "{lp}");
        assert!((h - 4f64.ln()).abs() < 1e-12, "{h}");
        // Logits [0, ln 3]: p = [1/4, 3/4]; H = −(¼ ln ¼ + ¾ ln ¾) ≈ 0.562335.
        let (lp, h) = raw_logprob_and_entropy(&[0.0, 3f32.ln()], 1);
        assert!((lp - 0.75f64.ln()).abs() < 1e-7, "{lp}");
        assert!((h - 0.562_335_144_618_5).abs() < 1e-7, "{h}");
    }

    #[test]
    fn masked_and_nan_logits_have_no_mass() {
        let (lp, h) = raw_logprob_and_entropy(&[0.0, f32::NEG_INFINITY, f32::NAN], 0);
        assert_eq!((lp, h), (0.0, 0.0));
        let (lp, _) = raw_logprob_and_entropy(&[0.0, f32::NEG_INFINITY], 1);
        assert_eq!(lp, f64::NEG_INFINITY);
        assert_eq!(
            raw_logprob_and_entropy(&[f32::NEG_INFINITY; 3], 0),
            (f64::NEG_INFINITY, 0.0)
        );
    }
}
