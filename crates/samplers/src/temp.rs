//! `temp(t, range=0.0, exponent=1.0)`: temperature, and entropy-based dynamic temperature.
//!
//! # Formula
//! - Plain (`range = 0`): `l_i ← l_i / t`.
//! - Dynamic (`range > 0`): with `t_min = max(0, t − range)`, `t_max = t + range`, the entropy
//!   `H = −Σ_{p_i > 0} p_i ln p_i` of the current softmax and `H_max = ln n` (`n` = number of
//!   finite candidates), use
//!   `t_dyn = t_min + (t_max − t_min) · (H / H_max)^exponent`, then apply `temp(t_dyn)`.
//! - `t ≤ 0` (or `t_dyn ≤ 0`) is greedy by masking: the largest logit is kept unchanged and
//!   every other candidate becomes `-inf`.
//!
//! # Reference
//! llama.cpp `llama_sampler_temp` / `llama_sampler_temp_ext` (`--temp`, `--dynatemp-range`,
//! `--dynatemp-exp`); dynamic temperature: Zhu et al., *Hot or Cold? Adaptive Temperature
//! Sampling for Code Generation with Large Language Models* (arXiv:2309.02772), as
//! implemented in llama.cpp and text-generation-webui. HF `TemperatureLogitsWarper` (which
//! rejects `t ≤ 0`).
//!
//! # Edge cases
//! - `t = 1` with `range = 0` is the neutral value: the stage is an identity.
//! - Plain temperature is only recorded as a pending scale (see [`Candidates::scale_logits`]):
//!   it keeps the order and costs nothing until a later stage reads logits.
//! - Greedy masking (`t ≤ 0`) keeps the maximum with the lowest id on ties (llama.cpp: the
//!   first in array order). A `t` so small that `1/t` overflows `f32` (below about
//!   `2.9e-39`, or once multiplied with an earlier pending scale) is treated as `t = 0`; a
//!   `t` so large that the factor underflows to 0 gives the `t → ∞` limit, every finite logit
//!   set to 0 (a uniform distribution). Either way no `NaN` or `+inf` can appear. Logits so
//!   large that `l / t` itself overflows `f32::MAX` are not guarded.
//! - Dynamic: nothing happens with fewer than two finite candidates. **Deviation:**
//!   llama.cpp takes `H_max = ln(size)` counting masked candidates too; here only finite
//!   ones count, because a masked candidate has probability 0 and no entropy to contribute,
//!   and masking a token (`logit_bias`) should act like removing it (`top_k`). `H / H_max`
//!   is clamped to `[0, 1]` against rounding, so `t_dyn` always lies in `[t_min, t_max]`.
//!   `exponent = 0` always gives `t_max` (`0^0 = 1`). Unlike llama.cpp, the candidates are
//!   not sorted to compute the entropy.

use alloc::vec::Vec;

use sieve_core::{
    BuildContext, Candidates, Context, Error, Footprint, Params, Range, Sampler, Stage,
};

use crate::{select, shared};

/// The `temp` stage.
#[derive(Debug, Clone)]
pub struct Temp {
    t: f64,
    range: f64,
    exponent: f64,
}

impl Temp {
    /// Plain temperature `t` (`t ≤ 0` masks all but the most likely token; `t = 1` is an
    /// identity).
    pub fn new(t: f64) -> Self {
        Temp::dynamic(t, 0.0, 1.0)
    }
    /// Dynamic temperature in `[max(0, t − range), t + range]`, driven by the normalized
    /// entropy raised to `exponent` (negative values count as 0). `range ≤ 0` is plain
    /// temperature.
    pub fn dynamic(t: f64, range: f64, exponent: f64) -> Self {
        Temp {
            t,
            range,
            exponent: exponent.max(0.0),
        }
    }

    /// `t_dyn` for these candidates, or `None` with fewer than two finite candidates.
    fn dynamic_t(&self, candidates: &mut Candidates) -> Option<f64> {
        let n = candidates
            .raw_logits()
            .iter()
            .filter(|&&x| x > f32::NEG_INFINITY)
            .count();
        if n <= 1 {
            return None;
        }
        let h_max = libm::log(n as f64);
        let h = select::entropy(candidates.weights().0);
        let ratio = (h / h_max).clamp(0.0, 1.0);
        let t_min = (self.t - self.range).max(0.0);
        let t_max = self.t + self.range;
        Some(t_min + (t_max - t_min) * libm::pow(ratio, self.exponent))
    }
}

/// Applies temperature `t` to the candidates (see the module doc for `t ≤ 0` and the
/// overflow guards).
fn apply_temperature(candidates: &mut Candidates, t: f64) {
    if t.is_nan() || t <= 0.0 {
        return mask_all_but_max(candidates);
    }
    let factor = (1.0 / t) as f32;
    let combined = candidates.pending_scale() * factor;
    if !combined.is_finite() {
        mask_all_but_max(candidates);
    } else if combined == 0.0 {
        for x in candidates.logits_mut() {
            if *x > f32::NEG_INFINITY {
                *x = 0.0;
            }
        }
    } else {
        candidates.scale_logits(factor);
    }
}

/// Greedy by masking: the largest logit (lowest id on ties) stays, every other becomes `-inf`.
fn mask_all_but_max(candidates: &mut Candidates) {
    if let Some(keep) = shared::argmax(candidates) {
        for (i, x) in candidates.logits_mut().iter_mut().enumerate() {
            if i != keep {
                *x = f32::NEG_INFINITY;
            }
        }
    }
}

impl Sampler for Temp {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if self.range > 0.0 {
            if let Some(t) = self.dynamic_t(candidates) {
                apply_temperature(candidates, t);
            }
        } else if self.t != 1.0 {
            apply_temperature(candidates, self.t);
        }
        Ok(())
    }

    /// A fixed temperature `t > 0` scales by `1/t`; a dynamic one reads the distribution.
    fn footprint(&mut self, _cx: &Context<'_>, _touched: &mut Vec<u32>) -> Footprint {
        if self.range > 0.0 {
            Footprint::Any
        } else if self.t == 1.0 {
            Footprint::Nothing
        } else if self.t > 0.0 {
            Footprint::Scale((1.0 / self.t) as f32)
        } else {
            Footprint::Any
        }
    }
}

/// The parameters of `temp`.
#[derive(Debug, Clone, Params)]
pub struct TempParams {
    /// temperature; 1 = off, 0 = keep only the most likely token
    #[param(range = Range::at_least(0.0))]
    pub t: f64,
    /// dynamic temperature: t varies in [t - range, t + range] with the entropy; 0 = off
    #[param(default = 0.0, range = Range::at_least(0.0))]
    pub range: f64,
    /// dynamic temperature: exponent applied to the normalized entropy
    #[param(default = 1.0, range = Range::at_least(0.0))]
    pub exponent: f64,
}

impl Stage for Temp {
    const NAME: &'static str = "temp";
    const DOC: &'static str =
        "divide logits by a temperature (0 = greedy); range > 0 makes it entropy-driven";
    const ALIASES: &'static [&'static str] = &["temperature"];
    type Params = TempParams;
    fn new(p: TempParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Temp::dynamic(p.t, p.range, p.exponent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use sieve_core::{Args, BuildContext, Value};

    const NEG_INF: f32 = f32::NEG_INFINITY;

    fn run(stage: Temp, c: &mut Candidates) -> Vec<(u32, f32)> {
        let mut stage = stage;
        stage.apply(c, &Context::default()).unwrap();
        c.iter().collect()
    }

    fn run_dense(stage: Temp, logits: &[f32]) -> Vec<(u32, f32)> {
        run(stage, &mut Candidates::from_logits(logits))
    }

    fn dense(logits: &[f32]) -> Vec<(u32, f32)> {
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect()
    }

    #[test]
    fn neutral_is_an_identity() {
        let logits = [0.5, -1.0, NEG_INF, 2.0];
        let mut c = Candidates::from_logits(&logits);
        assert_eq!(run(Temp::new(1.0), &mut c), dense(&logits));
        assert!(c.is_dense() && !c.is_sorted());
        assert_eq!(c.pending_scale(), 1.0);
        // A negative range is no dynamic temperature either.
        assert_eq!(
            run_dense(Temp::dynamic(1.0, -1.0, 1.0), &logits),
            dense(&logits)
        );
    }

    #[test]
    fn plain_temperature_is_a_lazy_scale() {
        // t = 0.5: l / t = 2·l.
        let mut c = Candidates::from_logits(&[1.0, -2.0, NEG_INF, 3.0]);
        assert_eq!(
            run(Temp::new(0.5), &mut c),
            vec![(0, 2.0), (1, -4.0), (2, NEG_INF), (3, 6.0)]
        );
        assert_eq!(c.pending_scale(), 2.0);
        assert_eq!(c.raw_logits(), &[1.0, -2.0, NEG_INF, 3.0]);
        assert!(c.is_dense());
        // t = 4: l / 4.
        assert_eq!(
            run_dense(Temp::new(4.0), &[2.0, -8.0]),
            vec![(0, 0.5), (1, -2.0)]
        );
    }

    #[test]
    fn zero_temperature_masks_all_but_the_maximum() {
        assert_eq!(
            run_dense(Temp::new(0.0), &[1.0, 3.0, 3.0, NEG_INF, 2.0]),
            vec![
                (0, NEG_INF),
                (1, 3.0),
                (2, NEG_INF),
                (3, NEG_INF),
                (4, NEG_INF)
            ]
        );
        // Sparse ids out of order: ids 5 and 2 tie at 3; the lower id 2 is kept.
        let mut c = Candidates::from_sparse(vec![5, 2, 9], vec![3.0, 3.0, 1.0], 10).unwrap();
        assert_eq!(
            run(Temp::new(0.0), &mut c),
            vec![(5, NEG_INF), (2, 3.0), (9, NEG_INF)]
        );
        // The kept logit includes an earlier pending scale.
        let mut c = Candidates::from_logits(&[1.0, 2.0]);
        c.scale_logits(3.0);
        assert_eq!(run(Temp::new(0.0), &mut c), vec![(0, NEG_INF), (1, 6.0)]);
        // Nothing finite, or nothing at all: unchanged, no panic.
        assert_eq!(
            run_dense(Temp::new(0.0), &[NEG_INF, NEG_INF]),
            dense(&[NEG_INF, NEG_INF])
        );
        assert_eq!(run_dense(Temp::new(0.0), &[]), vec![]);
    }

    #[test]
    fn extreme_temperatures_stay_finite() {
        // 1 / 1e-40 overflows f32: treated as t = 0.
        assert_eq!(
            run_dense(Temp::new(1e-40), &[1.0, 2.0, 0.0]),
            vec![(0, NEG_INF), (1, 2.0), (2, NEG_INF)]
        );
        // Two tiny temperatures whose product of factors overflows.
        let mut c = Candidates::from_logits(&[1.0, 2.0]);
        c.scale_logits(1e30);
        assert_eq!(run(Temp::new(1e-20), &mut c), vec![(0, NEG_INF), (1, 2e30)]);
        // 1 / 1e300 underflows to 0: the t → ∞ limit, all finite logits equal (uniform).
        assert_eq!(
            run_dense(Temp::new(1e300), &[1.0, NEG_INF, -3.0]),
            vec![(0, 0.0), (1, NEG_INF), (2, 0.0)]
        );
    }

    #[test]
    fn dynamic_uniform_gives_t_max_counting_only_finite_candidates() {
        // Two finite candidates of equal logit and one masked: H = ln 2 = H_max (n = 2), so
        // t_dyn = t + range = 1.5. (llama.cpp would use H_max = ln 3 and t_dyn ≈ 1.13.)
        let mut c = Candidates::from_logits(&[0.0, 0.0, NEG_INF]);
        run(Temp::dynamic(1.0, 0.5, 1.0), &mut c);
        assert!(
            (c.pending_scale() - 1.0 / 1.5).abs() < 1e-6,
            "{}",
            c.pending_scale()
        );
    }

    #[test]
    fn dynamic_by_hand() {
        // p = [1/2, 1/4, 1/4] (logits [ln 2, 0, 0]): H = 1.5 ln 2 = 1.039721,
        // H_max = ln 3 = 1.098612, H / H_max = 0.946395.
        // t = 1, range = 1: t_min = 0, t_max = 2.
        //   exponent 1: t_dyn = 2 · 0.946395 = 1.892789, scale 1 / t_dyn = 0.528321.
        //   exponent 2: t_dyn = 2 · 0.946395² = 1.791326, scale = 0.558246.
        //   exponent 0: t_dyn = t_max = 2, scale = 0.5.
        let logits = [2f32.ln(), 0.0, 0.0];
        for (exponent, want) in [(1.0, 0.528321), (2.0, 0.558246), (0.0, 0.5)] {
            let mut c = Candidates::from_logits(&logits);
            run(Temp::dynamic(1.0, 1.0, exponent), &mut c);
            assert!(
                (c.pending_scale() - want).abs() < 1e-5,
                "exponent {exponent}: {}",
                c.pending_scale()
            );
            assert!(c.is_dense(), "dynamic temperature does not reorder");
        }
    }

    #[test]
    fn dynamic_zero_entropy_with_zero_t_min_is_greedy() {
        // p = [1, e^-200 → 0 in f32]: H = 0, so t_dyn = t_min = max(0, 0.5 − 0.5) = 0.
        assert_eq!(
            run_dense(Temp::dynamic(0.5, 0.5, 1.0), &[0.0, -200.0]),
            vec![(0, 0.0), (1, NEG_INF)]
        );
    }

    #[test]
    fn dynamic_needs_two_finite_candidates() {
        for logits in [&[3.0, NEG_INF][..], &[3.0], &[]] {
            let mut c = Candidates::from_logits(logits);
            assert_eq!(run(Temp::dynamic(0.7, 0.5, 1.0), &mut c), dense(logits));
            assert_eq!(c.pending_scale(), 1.0);
        }
    }

    #[test]
    fn t_is_required_and_ranges_are_declared() {
        let e = sieve_core::StageEntry::of::<Temp>();
        let t = e.info.param("t").unwrap();
        assert_eq!(t.default, None);
        assert!(t.check(&Value::Float(-0.1)).is_err());
        assert!(t.check(&Value::Int(0)).is_ok());
        assert_eq!(
            e.info.param("range").unwrap().default,
            Some(Value::Float(0.0))
        );
        assert_eq!(
            e.info.param("exponent").unwrap().default,
            Some(Value::Float(1.0))
        );
        let args = |t: f64| {
            Args::new(
                "temp",
                vec![
                    ("t".into(), Value::Float(t)),
                    ("range".into(), Value::Float(0.0)),
                    ("exponent".into(), Value::Float(1.0)),
                ],
            )
        };
        let mut stage = (e.build)(&args(0.5), &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&[1.0]);
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.pending_scale(), 2.0);
        let missing = Args::new("temp", vec![]);
        assert!((e.build)(&missing, &BuildContext::default()).is_err());
    }
}
