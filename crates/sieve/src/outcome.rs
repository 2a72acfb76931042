//! What a step leaves behind, as plain serializable data: the surviving candidates with their
//! probabilities, the token selected, and the distribution after every stage.

use serde::Serialize;
use sieve_core::Candidates;

/// One surviving candidate: its token id, its logit (any pending temperature applied) and its
/// probability renormalized over the survivors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Survivor {
    /// Token id.
    pub id: u32,
    /// Logit after the stages so far.
    pub logit: f32,
    /// Softmax probability over the survivors.
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
