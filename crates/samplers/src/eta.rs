//! `eta(e)`: eta sampling, an entropy-dependent probability cutoff.
//!
//! # Formula
//! With `p = softmax(l)` over the current candidates and its entropy `H = −Σ p_i ln p_i` (nats):
//! ```text
//! η = min(e, √e · exp(−H))
//! ```
//! remove every candidate with `p_i < η`, except those whose logit equals the largest one. A flat
//! (high-entropy) distribution gets a lower cutoff than a peaked one.
//!
//! # Reference
//! Hewitt, Manning, Liang, *Truncation Sampling as Language Model Desmoothing* (arXiv:2210.15191);
//! HF `EtaLogitsWarper` with `min_tokens_to_keep = 1`. `H` and `η` are computed in `f64`, then `η`
//! is rounded to `f32` for the comparison (HF computes both in `f32`).
//!
//! # Edge cases
//! - `e = 0` is the neutral value: the stage is an identity. (HF rejects `e <= 0`; sieve accepts
//!   0 as "off". `e` must be below 1.)
//! - Removed candidates are dropped (order kept), masked (`-inf`) ones with them; when nothing
//!   falls below `η` the candidates are left untouched. Ties with the top token all survive.
//! - If every candidate is masked the stage does nothing (the pipeline reports the error).

use alloc::vec::Vec;

use sieve_core::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage};

use crate::select::entropy;
use crate::shared::{drop_improbable, UNIT_INTERVAL_OPEN_ABOVE};

/// The `eta` stage.
#[derive(Debug, Clone)]
pub struct Eta {
    e: f64,
    keep: Vec<bool>,
}

impl Eta {
    /// Drops tokens with probability below `min(e, √e · e^(−H))`; `e = 0` is off.
    pub fn new(e: f64) -> Self {
        Eta {
            e,
            keep: Vec::new(),
        }
    }

    /// The cutoff `η = min(e, √e · exp(−H))` for a distribution of entropy `h` nats.
    pub fn cutoff(&self, h: f64) -> f64 {
        let e = self.e;
        e.min(libm::sqrt(e) * libm::exp(-h))
    }
}

impl Sampler for Eta {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.e <= 0.0 || !candidates.has_finite() {
            return Ok(());
        }
        let h = entropy(candidates.softmax());
        drop_improbable(candidates, self.cutoff(h) as f32, &mut self.keep);
        Ok(())
    }
}

/// The parameters of `eta`.
#[derive(Debug, Clone, Params)]
pub struct EtaParams {
    /// cutoff ε of η = min(ε, √ε·e^−H); 0 keeps all
    #[param(range = UNIT_INTERVAL_OPEN_ABOVE)]
    pub e: f64,
}

impl Stage for Eta {
    const NAME: &'static str = "eta";
    const DOC: &'static str =
        "drop tokens with probability below min(e, sqrt(e)·exp(-entropy)) (0 = off)";
    const ALIASES: &'static [&'static str] = &["eta_cutoff"];
    type Params = EtaParams;
    fn new(p: EtaParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Eta::new(p.e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    // p = [0.5, 0.3, 0.15, 0.05]:
    // H = 0.5·0.693147 + 0.3·1.203973 + 0.15·1.897120 + 0.05·2.995732 = 1.142120 nats,
    // exp(−H) = 0.319142.
    const P: [f32; 4] = [0.5, 0.3, 0.15, 0.05];
    const H: f64 = 1.142120;

    fn run(e: f64, ps: &[f32]) -> Vec<u32> {
        let logits: Vec<f32> = ps.iter().map(|p| p.ln()).collect();
        let mut c = Candidates::from_logits(&logits);
        Eta::new(e).apply(&mut c, &Context::default()).unwrap();
        c.iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn cutoff_by_hand() {
        // e = 0.1: √0.1·0.319142 = 0.100921 > 0.1, so η = e = 0.1.
        assert!((Eta::new(0.1).cutoff(H) - 0.1).abs() < 1e-12);
        // e = 0.2: √0.2·0.319142 = 0.142724 < 0.2, so the entropy term binds.
        assert!((Eta::new(0.2).cutoff(H) - 0.142724).abs() < 1e-5);
    }

    #[test]
    fn drops_below_the_cutoff() {
        // e = 0.1 → η = 0.1: only the 0.05 token goes.
        assert_eq!(run(0.1, &P), vec![0, 1, 2]);
        // e = 0.2 → η ≈ 0.1427: 0.15 survives (epsilon(0.2) would drop it), 0.05 goes.
        assert_eq!(run(0.2, &P), vec![0, 1, 2]);
        // e = 0.3 → η = √0.3·0.319142 ≈ 0.1748: 0.15 goes too.
        assert_eq!(run(0.3, &P), vec![0, 1]);
    }

    #[test]
    fn zero_is_an_identity_and_top_ties_survive() {
        let logits: Vec<f32> = P.iter().map(|p| p.ln()).collect();
        let mut c = Candidates::from_logits(&logits);
        Eta::new(0.0).apply(&mut c, &Context::default()).unwrap();
        assert!(c.is_dense());
        assert_eq!(c.len(), 4);
        // p = [0.45, 0.45, 0.1], e = 0.9: η = min(0.9, √0.9·exp(−H)) with
        // H = 2·0.45·0.798508 + 0.1·2.302585 = 0.948915, so η = 0.948683·0.387159 = 0.367291:
        // the two tied tops stay, 0.1 goes.
        assert_eq!(run(0.9, &[0.45, 0.45, 0.1]), vec![0, 1]);
    }

    #[test]
    fn masked_candidates_are_dropped_and_all_masked_is_left_alone() {
        // Two equal tokens and a masked one: H = ln 2, η ≤ e = 0.1 < 0.5; the masked one goes.
        let mut c = Candidates::from_logits(&[0.0, f32::NEG_INFINITY, 0.0]);
        Eta::new(0.1).apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![0, 2]);
        let mut c = Candidates::from_logits(&[f32::NEG_INFINITY; 3]);
        Eta::new(0.5).apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn e_is_required_and_in_the_unit_interval() {
        let e = sieve_core::StageEntry::of::<Eta>();
        let spec = &e.info.params[0];
        assert!(spec.default.is_none());
        assert!(spec.check(&Value::Float(0.0)).is_ok());
        assert!(spec.check(&Value::Float(1.0)).is_err());
        let args = Args::new("eta", vec![("e".into(), Value::Float(0.3))]);
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let logits: Vec<f32> = P.iter().map(|p| p.ln()).collect();
        let mut c = Candidates::from_logits(&logits);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().map(|(id, _)| id).collect::<Vec<_>>(), vec![0, 1]);
    }
}
