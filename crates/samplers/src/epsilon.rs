//! `epsilon(e)`: epsilon sampling, drop every token whose probability is below `e`.
//!
//! # Formula
//! With `p = softmax(l)` over the current candidates, remove every candidate with `p_i < e`,
//! except those whose logit equals the largest one (so at least one token, and every tie of the
//! top token, survives).
//!
//! # Reference
//! Hewitt, Manning, Liang, *Truncation Sampling as Language Model Desmoothing* (arXiv:2210.15191);
//! HF `EpsilonLogitsWarper` with `min_tokens_to_keep = 1` (the comparison `p < e` in `f32`, as
//! there).
//!
//! # Edge cases
//! - `e = 0` is the neutral value: the stage is an identity. (HF rejects `e <= 0`; sieve accepts
//!   0 as "off". `e` must be below 1.)
//! - Removed candidates are dropped (the candidates shrink, order kept), not only masked; masked
//!   (`-inf`) candidates are dropped with them. Cached probabilities are kept, so a following
//!   `dist` renormalizes over the survivors.
//! - When nothing falls below `e` the candidates are left untouched (still dense).
//! - If every candidate is masked the stage does nothing (the pipeline reports the error).

use alloc::vec::Vec;

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage};

use crate::shared::{drop_improbable, UNIT_INTERVAL_OPEN_ABOVE};

/// The `epsilon` stage.
#[derive(Debug, Clone)]
pub struct Epsilon {
    e: f32,
    keep: Vec<bool>,
}

impl Epsilon {
    /// Drops tokens with probability below `e`; `e = 0` is off.
    pub fn new(e: f32) -> Self {
        Epsilon {
            e,
            keep: Vec::new(),
        }
    }
}

impl Sampler for Epsilon {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.e > 0.0 {
            drop_improbable(candidates, self.e, &mut self.keep);
        }
        Ok(())
    }
}

/// The parameters of `epsilon`.
#[derive(Debug, Clone, Params)]
pub struct EpsilonParams {
    /// probability cutoff ε; 0 keeps all
    #[param(range = UNIT_INTERVAL_OPEN_ABOVE)]
    pub e: f32,
}

impl Stage for Epsilon {
    const NAME: &'static str = "epsilon";
    const DOC: &'static str = "drop tokens with probability below e, keeping the top one (0 = off)";
    const ALIASES: &'static [&'static str] = &["epsilon_cutoff"];
    type Params = EpsilonParams;
    fn new(p: EpsilonParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Epsilon::new(p.e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    fn ln(ps: &[f32]) -> Vec<f32> {
        ps.iter().map(|p| p.ln()).collect()
    }

    fn run(e: f32, logits: &[f32]) -> Vec<u32> {
        let mut c = Candidates::from_logits(logits);
        Epsilon::new(e).apply(&mut c, &Context::default()).unwrap();
        c.iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn drops_tokens_below_e_in_order() {
        // p = [0.15, 0.5, 0.05, 0.3]; e = 0.1 drops only the 0.05 token (id 2).
        assert_eq!(run(0.1, &ln(&[0.15, 0.5, 0.05, 0.3])), vec![0, 1, 3]);
        // e = 0.2 also drops 0.15 (id 0).
        assert_eq!(run(0.2, &ln(&[0.15, 0.5, 0.05, 0.3])), vec![1, 3]);
    }

    #[test]
    fn zero_and_low_e_are_identities() {
        let logits = ln(&[0.15, 0.5, 0.05, 0.3]);
        for e in [0.0, 0.01] {
            let mut c = Candidates::from_logits(&logits);
            Epsilon::new(e).apply(&mut c, &Context::default()).unwrap();
            assert!(c.is_dense(), "e = {e}");
            assert_eq!(c.len(), 4);
        }
    }

    #[test]
    fn the_top_token_and_its_ties_survive() {
        // p = [0.3, 0.4, 0.3] with e = 0.5: everything is below e, the top (id 1) stays.
        assert_eq!(run(0.5, &ln(&[0.3, 0.4, 0.3])), vec![1]);
        // Uniform p = 0.25 with e = 0.3: all four tie with the top, all stay.
        assert_eq!(run(0.3, &[1.0; 4]), vec![0, 1, 2, 3]);
    }

    #[test]
    fn masked_candidates_are_dropped_and_all_masked_is_left_alone() {
        assert_eq!(run(0.1, &[0.0, f32::NEG_INFINITY, 0.0]), vec![0, 2]);
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 2]);
        Epsilon::new(0.5)
            .apply(&mut c, &Context::default())
            .unwrap();
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn probabilities_of_survivors_renormalize() {
        // p = [0.6, 0.35, 0.05], e = 0.1 → survivors 0.6, 0.35 → 0.6/0.95, 0.35/0.95.
        let mut c = Candidates::from_logits(&ln(&[0.6, 0.35, 0.05]));
        Epsilon::new(0.1)
            .apply(&mut c, &Context::default())
            .unwrap();
        let p = c.softmax().to_vec();
        assert!(
            (p[0] - 0.6 / 0.95).abs() < 1e-6 && (p[1] - 0.35 / 0.95).abs() < 1e-6,
            "{p:?}"
        );
    }

    #[test]
    fn e_is_required_and_in_the_unit_interval() {
        let e = sieve_core::StageEntry::of::<Epsilon>();
        let spec = &e.info.params[0];
        assert!(spec.default.is_none());
        assert!(spec.check(&Value::Float(0.0)).is_ok());
        assert!(spec.check(&Value::Float(1.0)).is_err());
        assert!(spec.check(&Value::Float(-0.1)).is_err());
        let args = Args::new("epsilon", vec![("e".into(), Value::Float(0.2))]);
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&ln(&[0.15, 0.5, 0.05, 0.3]));
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![1, 3]);
    }
}
