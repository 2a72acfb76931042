//! What a step leaves behind, as plain serializable data: the surviving candidates with their
//! probabilities, the token selected, and the distribution after every stage.

use serde::{Serialize, Serializer};
use sieve_core::Candidates;

/// Serializes a float as a JSON number, or, where JSON has none, as the string `"inf"`,
/// `"-inf"` or `"nan"`: the one spelling every `--json` output of sieve uses (serde_json
/// alone would write `null`, which cannot tell the three apart).
///
/// # Errors
/// The serializer's.
pub fn json_float<S: Serializer>(x: &f32, s: S) -> Result<S::Ok, S::Error> {
    match *x {
        // As an `f32`, so that it prints in its shortest `f32` form (`0.7310586`).
        x if x.is_finite() => s.serialize_f32(x),
        x => json_f64(&f64::from(x), s),
    }
}

/// [`json_float`] for `f64`.
///
/// # Errors
/// The serializer's.
pub fn json_f64<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    match *x {
        x if x.is_finite() => s.serialize_f64(x),
        x if x.is_nan() => s.serialize_str("nan"),
        x if x > 0.0 => s.serialize_str("inf"),
        _ => s.serialize_str("-inf"),
    }
}

/// [`json_f64`] for an optional `f64` (`None` is `null`).
///
/// # Errors
/// The serializer's.
pub fn json_opt_f64<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => json_f64(x, s),
        None => s.serialize_none(),
    }
}

/// One surviving candidate: its token id, its logit (any pending temperature applied) and its
/// probability renormalized over the survivors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Survivor {
    /// Token id.
    pub id: u32,
    /// Logit after the stages so far (in JSON, a non-finite one is `"inf"`, `"-inf"` or
    /// `"nan"`: [`json_float`]).
    #[serde(serialize_with = "json_float")]
    pub logit: f32,
    /// Softmax probability over the survivors.
    #[serde(serialize_with = "json_float")]
    pub p: f32,
}

/// The candidates as one stage left them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageStep {
    /// The stage's name (`input` for the candidates before the first stage).
    pub stage: String,
    /// The finite candidates, most likely first (ties by ascending id).
    pub survivors: Vec<Survivor>,
    /// The token the stage selected, for a selector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<u32>,
}

impl StageStep {
    /// Looks at the candidates after `stage` (they are not modified).
    pub fn observe(stage: &str, candidates: &Candidates) -> StageStep {
        StageStep {
            stage: stage.to_string(),
            survivors: by_probability(&survivors(candidates)),
            selected: candidates.selected_id(),
        }
    }
}

/// The result of running a pipeline on one logits vector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The pipeline in canonical form (every argument named, defaults filled).
    pub pipeline: String,
    /// The run's seed (used by the random stages whose `seed` is `-1`).
    pub seed: u64,
    /// The selected token id.
    pub selected: u32,
    /// The candidates the last stage left, most likely first.
    pub survivors: Vec<Survivor>,
    /// The input, then one entry per stage, in run order.
    pub trace: Vec<StageStep>,
}

/// The finite candidates in their current order, with softmax probabilities over them
/// (masked `-inf` candidates are left out).
///
/// Works on a copy, so that looking never changes what later stages see.
pub fn survivors(candidates: &Candidates) -> Vec<Survivor> {
    let mut copy = candidates.clone();
    let probs = copy.softmax();
    candidates
        .iter()
        .zip(probs)
        .filter(|((_, logit), _)| *logit > f32::NEG_INFINITY)
        .map(|((id, logit), &p)| Survivor { id, logit, p })
        .collect()
}

/// Shannon entropy in nats, `H = −Σ p ln p` over the survivors with `p > 0`.
pub fn entropy(survivors: &[Survivor]) -> f64 {
    survivors
        .iter()
        .filter(|s| s.p > 0.0)
        .map(|s| {
            let p = s.p as f64;
            -p * p.ln()
        })
        .sum()
}

/// The survivors from most to least likely, ties by ascending id (a stable display order
/// whatever order the stages left).
pub fn by_probability(survivors: &[Survivor]) -> Vec<Survivor> {
    let mut sorted = survivors.to_vec();
    sorted.sort_by(|a, b| b.p.total_cmp(&a.p).then(a.id.cmp(&b.id)));
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_serialize_as_named_strings() {
        let s = |logit: f32, p: f32| serde_json::to_string(&Survivor { id: 1, logit, p }).unwrap();
        assert_eq!(s(0.5, 0.25), r#"{"id":1,"logit":0.5,"p":0.25}"#);
        // Shortest f32 form, not the f64 expansion.
        assert_eq!(s(0.731_058_6, 1.0), r#"{"id":1,"logit":0.7310586,"p":1.0}"#);
        assert_eq!(
            s(f32::INFINITY, f32::NAN),
            r#"{"id":1,"logit":"inf","p":"nan"}"#
        );
        assert_eq!(
            s(f32::NEG_INFINITY, 0.0),
            r#"{"id":1,"logit":"-inf","p":0.0}"#
        );
        let f = |x: f64| json_f64(&x, serde_json::value::Serializer).unwrap();
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(f64::NEG_INFINITY), "-inf");
        assert_eq!(f(f64::NAN), "nan");
        assert_eq!(f(-2.5), -2.5);
        let o = |x: Option<f64>| json_opt_f64(&x, serde_json::value::Serializer).unwrap();
        assert_eq!(o(None), serde_json::Value::Null);
        assert_eq!(o(Some(f64::INFINITY)), "inf");
    }

    #[test]
    fn survivors_skip_masked_and_renormalize() {
        // p ∝ e^l over the finite logits [0, ln 3] → [1/4, 3/4].
        let c = Candidates::from_logits(&[0.0, f32::NEG_INFINITY, 3f32.ln()]);
        let s = survivors(&c);
        assert_eq!(s.iter().map(|s| s.id).collect::<Vec<_>>(), vec![0, 2]);
        assert!(
            (s[0].p - 0.25).abs() < 1e-6 && (s[1].p - 0.75).abs() < 1e-6,
            "{s:?}"
        );
        assert_eq!(s[1].logit, 3f32.ln());
    }

    #[test]
    fn survivors_apply_the_pending_scale_and_leave_the_input_alone() {
        let mut c = Candidates::from_logits(&[2.0, 0.0]);
        c.scale_logits(0.5);
        let s = survivors(&c);
        assert_eq!((s[0].logit, s[1].logit), (1.0, 0.0));
        assert_eq!(
            c.cached_probs(),
            None,
            "the input candidates must stay untouched"
        );
    }

    #[test]
    fn entropy_of_uniform_and_certain() {
        let uniform: Vec<Survivor> = (0..4)
            .map(|id| Survivor {
                id,
                logit: 0.0,
                p: 0.25,
            })
            .collect();
        assert!((entropy(&uniform) - 4f64.ln()).abs() < 1e-12);
        let certain = [
            Survivor {
                id: 0,
                logit: 0.0,
                p: 1.0,
            },
            Survivor {
                id: 1,
                logit: -99.0,
                p: 0.0,
            },
        ];
        assert_eq!(entropy(&certain), 0.0);
    }

    #[test]
    fn display_order_is_probability_then_id() {
        let s = [
            Survivor {
                id: 5,
                logit: 0.0,
                p: 0.25,
            },
            Survivor {
                id: 1,
                logit: 1.0,
                p: 0.5,
            },
            Survivor {
                id: 2,
                logit: 0.0,
                p: 0.25,
            },
        ];
        let ids: Vec<u32> = by_probability(&s).iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![1, 2, 5]);
    }
}
