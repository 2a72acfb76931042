//! Log-probabilities of a chosen token and its most likely alternatives, from the raw logits
//! (the model's distribution) or from the candidates a pipeline left (the distribution its
//! selector drew from).
//!
//! With logits `l` over the candidates, `log p_i = l_i − m − ln Σ_j e^{l_j − m}` where `m` is
//! the largest logit; masked (`-inf`) and NaN logits have probability 0. The sums run in
//! `f64` in candidate order, so the numbers depend on nothing but the logits.

use sieve_core::math::sanitize;
use sieve_core::{rank, Candidates};

use super::request::TokenLogprobs;

/// The log-probabilities of `token` and the `top` most likely tokens under the softmax of
/// the raw `logits` (token `i` has logit `logits[i]`).
pub fn from_logits(logits: &[f32], token: u32, top: usize) -> TokenLogprobs {
    of_pairs(
        || logits.iter().enumerate().map(|(i, &l)| (i as u32, l)),
        token,
        top,
    )
}

/// The log-probabilities of `token` and the `top` most likely tokens under the softmax of
/// what `candidates` hold (their pending temperature applied); a token that is not a
/// candidate has log-probability `-inf`.
pub fn from_candidates(candidates: &Candidates, token: u32, top: usize) -> TokenLogprobs {
    of_pairs(|| candidates.iter(), token, top)
}

/// The common computation over `(id, logit)` pairs; `pairs` is called twice (maximum, then
/// sums), so the candidates are never copied.
fn of_pairs<I>(pairs: impl Fn() -> I, token: u32, top: usize) -> TokenLogprobs
where
    I: Iterator<Item = (u32, f32)>,
{
    let max = pairs()
        .map(|(_, l)| sanitize(l))
        .fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return TokenLogprobs {
            logprob: f32::NEG_INFINITY,
            top: Vec::new(),
        };
    }
    let m = f64::from(max);
    let mut sum = 0.0f64;
    let mut chosen = f64::NEG_INFINITY;
    // The best `top` pairs so far, in rank order.
    let mut best: Vec<(f32, u32)> = Vec::with_capacity(top + 1);
    for (id, l) in pairs() {
        let l = sanitize(l);
        if l == f32::NEG_INFINITY {
            continue;
        }
        sum += (f64::from(l) - m).exp();
        if id == token {
            chosen = f64::from(l);
        }
        if top > 0 && (best.len() < top || rank((l, id), best[best.len() - 1]).is_lt()) {
            let at = best.partition_point(|&b| rank(b, (l, id)).is_lt());
            best.insert(at, (l, id));
            best.truncate(top);
        }
    }
    let log_z = m + sum.ln();
    TokenLogprobs {
        logprob: (chosen - log_z) as f32,
        top: best
            .into_iter()
            .map(|(l, id)| (id, (f64::from(l) - log_z) as f32))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // Logits [0, ln 3]: p = [1/4, 3/4].
        let lp = from_logits(&[0.0, 3f32.ln()], 0, 2);
        assert!((lp.logprob - 0.25f32.ln()).abs() < 1e-6, "{lp:?}");
        assert_eq!(lp.top.len(), 2);
        assert_eq!(lp.top[0].0, 1);
        assert!((lp.top[0].1 - 0.75f32.ln()).abs() < 1e-6);
        assert_eq!(lp.top[1].0, 0);
    }

    #[test]
    fn ties_rank_by_lower_id_and_masked_tokens_are_never_listed() {
        let lp = from_logits(&[1.0, f32::NEG_INFINITY, 1.0, f32::NAN, 1.0], 1, 5);
        assert_eq!(lp.logprob, f32::NEG_INFINITY);
        let ids: Vec<u32> = lp.top.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [0, 2, 4]);
        assert!((lp.top[0].1 - (1.0f32 / 3.0).ln()).abs() < 1e-6);
        assert_eq!(from_logits(&[f32::NEG_INFINITY; 3], 0, 2).top, []);
    }

    #[test]
    fn top_keeps_the_best_whatever_the_order() {
        let logits = [0.5, 3.0, -1.0, 2.0, 7.0, 2.0];
        let lp = from_logits(&logits, 4, 3);
        let ids: Vec<u32> = lp.top.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [4, 1, 3]);
        assert_eq!(lp.logprob, lp.top[0].1);
        assert!(from_logits(&logits, 4, 0).top.is_empty());
    }

    #[test]
    fn candidates_use_the_temperature_and_the_survivors() {
        let mut c = Candidates::from_logits(&[0.0, 2f32.ln() * 2.0, 5.0]);
        c.scale_logits(0.5);
        c.retain(|id, _| id != 2);
        // Survivors 0 and 1 with logits 0 and ln 2: p = [1/3, 2/3].
        let lp = from_candidates(&c, 1, 5);
        assert!((lp.logprob - (2.0f32 / 3.0).ln()).abs() < 1e-6, "{lp:?}");
        assert_eq!(lp.top.len(), 2);
        assert_eq!(from_candidates(&c, 2, 0).logprob, f32::NEG_INFINITY);
    }
}
