//! The acceptance step of speculative sampling (Leviathan et al. 2023, arXiv:2211.17192,
//! Algorithm 1; Chen et al. 2023, arXiv:2302.01318), on explicit distributions.
//!
//! # Formula
//! A draft token `x ~ q` is accepted with probability `min(1, p(x) / q(x))`; on rejection the
//! token is drawn from the residual `r = norm(max(0, p − q))`. Then for every token `y`
//!
//! ```text
//! P(y) = q(y)·min(1, p(y)/q(y)) + (Σ_x q(x)·(1 − min(1, p(x)/q(x))))·r(y)
//!      = min(q(y), p(y))        + (1 − Σ_x min(q(x), p(x)))        ·r(y)
//!      = min(q(y), p(y))        + Σ_x max(0, p(x) − q(x))           ·r(y)   (Σp = Σq = 1)
//!      = min(q(y), p(y)) + max(0, p(y) − q(y)) = p(y),
//! ```
//!
//! so the token has the target's distribution `p` whatever `q` is.
//!
//! # Special cases
//! - Point masses (`greedy`): `p = δ_a`, `q = δ_b` — accept iff `b = a`; on rejection the
//!   residual is `δ_a`. No random number is drawn when the ratio is 0 or at least 1.
//! - A deterministic draft (prompt lookup) is `q = δ_x`: accept with probability `p(x)`; the
//!   residual `max(0, p − δ_x)` is `p` with `x` removed, renormalized.
//!
//! # Edge cases
//! - The acceptance draw is `u < ratio` with `u ∈ [0, 1)`, strict, so a token with `p(x) = 0`
//!   is never accepted (`u ≤ ratio`, as transformers writes it, accepts it when `u = 0`).
//! - If rounding leaves the residual without mass (`p ≈ q`, so a rejection is a rounding
//!   event), the token is drawn from `p` itself.
//! - Distributions may be over vocabularies of different lengths (a draft model whose
//!   embedding table is padded differently): a missing id has probability 0.

use sieve_core::{Candidates, SieveRng};

/// A distribution over token ids: what a selector draws from after the transforming stages.
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// All the mass on one token (the `greedy` selector, a deterministic draft).
    Point(u32),
    /// `probs[id]` is the probability of token `id` (non-negative; they sum to 1 up to
    /// rounding).
    Probs(Vec<f64>),
}

impl Distribution {
    /// The distribution `dist` draws from: the softmax of the surviving candidates, with the
    /// weights `dist` uses (`e^(l − max)` in `f32`), normalized in `f64`, laid out densely
    /// over `vocab` ids. With no finite candidate every probability is 0.
    pub fn of_candidates(candidates: &mut Candidates, vocab: usize) -> Self {
        let mut probs = vec![0.0f64; vocab.max(candidates.vocab_size())];
        let _ = candidates.weights();
        let weights = candidates.cached_probs().unwrap_or(&[]);
        let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        if total > 0.0 {
            for (i, &w) in weights.iter().enumerate() {
                if w > 0.0 {
                    probs[candidates.id(i) as usize] += f64::from(w) / total;
                }
            }
        }
        Distribution::Probs(probs)
    }

    /// The probability of `id`.
    pub fn prob(&self, id: u32) -> f64 {
        match self {
            Distribution::Point(t) => f64::from(u8::from(*t == id)),
            Distribution::Probs(p) => p.get(id as usize).copied().unwrap_or(0.0),
        }
    }

    /// Draws a token: a point mass without consuming randomness, otherwise one `u ∈ [0, 1)`
    /// and the first id whose cumulative probability exceeds `u · Σp` (strict, so an id of
    /// probability 0 is never drawn; if rounding leaves the target unreached, the last id with
    /// mass). `None` for a distribution without mass.
    pub fn draw(&self, rng: &mut SieveRng) -> Option<u32> {
        match self {
            Distribution::Point(t) => Some(*t),
            Distribution::Probs(p) => {
                let total: f64 = p.iter().sum();
                if total <= 0.0 {
                    return None;
                }
                let target = rng.next_f64() * total;
                let mut cum = 0.0;
                for (id, &x) in p.iter().enumerate() {
                    if x > 0.0 {
                        cum += x;
                        if cum > target {
                            return Some(id as u32);
                        }
                    }
                }
                p.iter().rposition(|&x| x > 0.0).map(|id| id as u32)
            }
        }
    }
}

/// `min(1, p(x) / q(x))`: the probability of accepting the draft token `x`, drawn from `q`.
/// A token `q` could not have drawn (`q(x) = 0`) is accepted iff `p(x) > 0`.
pub fn acceptance(p: &Distribution, q: &Distribution, x: u32) -> f64 {
    let (px, qx) = (p.prob(x), q.prob(x));
    if qx <= 0.0 {
        return if px > 0.0 { 1.0 } else { 0.0 };
    }
    (px / qx).min(1.0)
}

/// `norm(max(0, p − q))`: what a rejected position draws from; `p` itself when the
/// difference has no mass (only by rounding: a rejection implies `p ≠ q`).
pub fn residual(p: &Distribution, q: &Distribution) -> Distribution {
    match p {
        // max(0, δ_a − q) is (1 − q(a))·δ_a: δ_a whenever it has mass, and p = δ_a otherwise.
        Distribution::Point(a) => Distribution::Point(*a),
        Distribution::Probs(pp) => {
            let mut r: Vec<f64> = pp
                .iter()
                .enumerate()
                .map(|(id, &x)| (x - q.prob(id as u32)).max(0.0))
                .collect();
            let total: f64 = r.iter().sum();
            if total <= 0.0 {
                return p.clone();
            }
            for x in &mut r {
                *x /= total;
            }
            Distribution::Probs(r)
        }
    }
}

/// The outcome of checking one draft token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The draft token is kept.
    Accept,
    /// The draft token is rejected; this token, drawn from the residual, replaces it and
    /// ends the run of draft tokens.
    Reject(u32),
}

/// Checks draft token `x` (drawn from `q`) against the target `p`: accepts with probability
/// [`acceptance`] (one `u ∈ [0, 1)` drawn only when it is strictly between 0 and 1), else
/// draws the replacement from [`residual`]. `None` when `p` has no mass.
pub fn verify(p: &Distribution, q: &Distribution, x: u32, rng: &mut SieveRng) -> Option<Verdict> {
    let a = acceptance(p, q, x);
    let accepted = if a >= 1.0 {
        true
    } else if a <= 0.0 {
        false
    } else {
        rng.next_f64() < a
    };
    if accepted {
        Some(Verdict::Accept)
    } else {
        residual(p, q).draw(rng).map(Verdict::Reject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probs(p: &[f64]) -> Distribution {
        Distribution::Probs(p.to_vec())
    }

    fn assert_close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    fn as_vec(d: &Distribution, vocab: usize) -> Vec<f64> {
        (0..vocab as u32).map(|id| d.prob(id)).collect()
    }

    /// The exact distribution of the token one speculative position emits, by enumeration
    /// over the draft token: `Σ_x q(x)·[a(x)·δ_x + (1 − a(x))·r]`.
    fn emitted(p: &Distribution, q: &Distribution, vocab: usize) -> Vec<f64> {
        let r = residual(p, q);
        let mut out = vec![0.0; vocab];
        for x in 0..vocab as u32 {
            let (qx, a) = (q.prob(x), acceptance(p, q, x));
            out[x as usize] += qx * a;
            for (y, o) in out.iter_mut().enumerate() {
                *o += qx * (1.0 - a) * r.prob(y as u32);
            }
        }
        out
    }

    #[test]
    fn hand_computed_acceptance_and_residual() {
        // p = [0.5, 0.3, 0.2], q = [0.2, 0.6, 0.2]:
        // a = [min(1, 0.5/0.2), 0.3/0.6, 0.2/0.2] = [1, 0.5, 1];
        // max(0, p − q) = [0.3, 0, 0], so the residual is [1, 0, 0].
        let (p, q) = (probs(&[0.5, 0.3, 0.2]), probs(&[0.2, 0.6, 0.2]));
        assert_eq!(acceptance(&p, &q, 0), 1.0);
        assert!((acceptance(&p, &q, 1) - 0.5).abs() < 1e-15);
        assert_eq!(acceptance(&p, &q, 2), 1.0);
        assert_close(&as_vec(&residual(&p, &q), 3), &[1.0, 0.0, 0.0]);
        // Emitted: 0 ← q(0)·1 + q(1)·(1 − 0.5)·1 = 0.2 + 0.3; 1 ← q(1)·0.5; 2 ← q(2)·1.
        assert_close(&emitted(&p, &q, 3), &[0.5, 0.3, 0.2]);
        // The other way round: a = [0.4, 1, 1], residual = [0, 0.3, 0]/0.3 = [0, 1, 0].
        assert!((acceptance(&q, &p, 0) - 0.4).abs() < 1e-15);
        assert_close(&as_vec(&residual(&q, &p), 3), &[0.0, 1.0, 0.0]);
        assert_close(&emitted(&q, &p, 3), &[0.2, 0.6, 0.2]);
    }

    #[test]
    fn a_residual_with_several_ids_is_renormalized() {
        // p = [0.4, 0.4, 0.1, 0.1], q = [0.1, 0.2, 0.3, 0.4]: max(0, p − q) = [0.3, 0.2, 0, 0]
        // with mass 0.5, so r = [0.6, 0.4, 0, 0].
        let (p, q) = (probs(&[0.4, 0.4, 0.1, 0.1]), probs(&[0.1, 0.2, 0.3, 0.4]));
        assert_close(&as_vec(&residual(&p, &q), 4), &[0.6, 0.4, 0.0, 0.0]);
        assert_close(&emitted(&p, &q, 4), &[0.4, 0.4, 0.1, 0.1]);
    }

    #[test]
    fn enumeration_gives_p_for_many_pairs() {
        // Pseudo-random p and q over 6 ids, some with zeros (truncated supports).
        let mut s = 12345u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as f64 / (1u64 << 31) as f64
        };
        for _ in 0..200 {
            let mut make = || {
                let mut v: Vec<f64> = (0..6)
                    .map(|_| {
                        let x = next();
                        if x < 0.3 {
                            0.0
                        } else {
                            x
                        }
                    })
                    .collect();
                v[0] += 0.01; // never all zero
                let t: f64 = v.iter().sum();
                v.iter().map(|x| x / t).collect::<Vec<_>>()
            };
            let (p, q) = (make(), make());
            assert_close(&emitted(&probs(&p), &probs(&q), 6), &p);
        }
    }

    #[test]
    fn a_deterministic_draft_is_q_delta() {
        // q = δ_1, p = [0.5, 0.3, 0.2]: accept with p(1) = 0.3; the residual is p without
        // id 1: [0.5, 0, 0.2]/0.7.
        let (p, q) = (probs(&[0.5, 0.3, 0.2]), Distribution::Point(1));
        assert!((acceptance(&p, &q, 1) - 0.3).abs() < 1e-15);
        assert_close(&as_vec(&residual(&p, &q), 3), &[0.5 / 0.7, 0.0, 0.2 / 0.7]);
        assert_close(&emitted(&p, &q, 3), &[0.5, 0.3, 0.2]);
    }

    #[test]
    fn point_masses_accept_only_the_argmax() {
        let mut rng = SieveRng::new(1, "test");
        let (a, b) = (Distribution::Point(2), Distribution::Point(0));
        assert_eq!(verify(&a, &a, 2, &mut rng), Some(Verdict::Accept));
        assert_eq!(verify(&a, &b, 0, &mut rng), Some(Verdict::Reject(2)));
        // A sampled draft against a greedy target: accepted iff it is the argmax.
        let q = probs(&[0.3, 0.3, 0.4]);
        assert_eq!(verify(&a, &q, 2, &mut rng), Some(Verdict::Accept));
        assert_eq!(verify(&a, &q, 1, &mut rng), Some(Verdict::Reject(2)));
        // No randomness was used for any of these.
        let mut fresh = SieveRng::new(1, "test");
        assert_eq!(rng.next_u64(), fresh.next_u64());
    }

    #[test]
    fn a_zero_probability_token_is_never_accepted_or_drawn() {
        let p = probs(&[0.0, 1.0]);
        let q = probs(&[0.5, 0.5]);
        let mut rng = SieveRng::new(3, "test");
        for _ in 0..100 {
            assert_eq!(verify(&p, &q, 0, &mut rng), Some(Verdict::Reject(1)));
            assert_eq!(q.draw(&mut rng).map(|t| t < 2), Some(true));
            assert_eq!(p.draw(&mut rng), Some(1));
        }
        assert_eq!(probs(&[0.0, 0.0]).draw(&mut rng), None);
    }

    #[test]
    fn residual_without_mass_falls_back_to_p() {
        let p = probs(&[0.25, 0.75]);
        assert_eq!(residual(&p, &p), p);
    }

    #[test]
    fn vocabularies_of_different_lengths() {
        // The draft knows 2 ids, the target 3: id 2 has q = 0.
        let (p, q) = (probs(&[0.2, 0.2, 0.6]), probs(&[0.5, 0.5]));
        assert_close(&as_vec(&residual(&p, &q), 3), &[0.0, 0.0, 1.0]);
        assert_close(&emitted(&p, &q, 3), &[0.2, 0.2, 0.6]);
    }

    #[test]
    fn sampled_verdicts_match_the_acceptance_probability() {
        // p = [0.5, 0.3, 0.2], q = [0.2, 0.6, 0.2], x = 1: accepted with probability 0.5, and
        // every rejection is replaced by id 0. 100 000 trials: the standard error of the
        // rate is √(0.25/100 000) ≈ 0.0016; ±0.01 is six of them.
        let (p, q) = (probs(&[0.5, 0.3, 0.2]), probs(&[0.2, 0.6, 0.2]));
        let mut rng = SieveRng::new(9, "test");
        let n = 100_000;
        let mut accepted = 0;
        for _ in 0..n {
            match verify(&p, &q, 1, &mut rng).unwrap() {
                Verdict::Accept => accepted += 1,
                Verdict::Reject(y) => assert_eq!(y, 0),
            }
        }
        let rate = f64::from(accepted) / f64::from(n);
        assert!((rate - 0.5).abs() < 0.01, "{rate}");
    }

    #[test]
    fn of_candidates_is_the_softmax_of_the_survivors() {
        // Logits ln[1, 2, 3, 4] with id 0 masked: p = [0, 2, 3, 4]/9, laid out over 5 ids.
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY, 2f32.ln(), 3f32.ln(), 4f32.ln()]);
        let d = Distribution::of_candidates(&mut c, 5);
        let want = [0.0, 2.0 / 9.0, 3.0 / 9.0, 4.0 / 9.0, 0.0];
        for (id, w) in want.iter().enumerate() {
            assert!((d.prob(id as u32) - w).abs() < 1e-6, "{d:?}");
        }
        // Sparse, reordered survivors keep their ids.
        let mut c = Candidates::from_sparse(vec![3, 1], vec![0.0, 0.0], 4).unwrap();
        let d = Distribution::of_candidates(&mut c, 4);
        assert_close(&as_vec(&d, 4), &[0.0, 0.5, 0.0, 0.5]);
    }
}
