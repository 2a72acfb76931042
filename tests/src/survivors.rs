//! The candidates left after a step, and their text form for snapshots.
//!
//! A survivor is a candidate with a finite logit (masked `-inf` candidates are not reported).
//! Probabilities are recomputed here in `f64`, renormalized over the survivors, independently
//! of the core's `f32` softmax, so a snapshot shows the mathematics and not the kernel's
//! rounding.

use sieve_core::{Candidates, Error};

use crate::sig::sig6;

/// One surviving candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Survivor {
    /// Token id.
    pub id: u32,
    /// Logit after the pipeline (any pending temperature applied).
    pub logit: f32,
    /// Softmax probability over the survivors, in `f64`.
    pub p: f64,
}

/// The finite candidates of `candidates` in rank order (descending logit, ties by ascending
/// id), with probabilities `p_i = e^(l_i − max) / Σ_j e^(l_j − max)` over them.
pub fn survivors(candidates: &Candidates) -> Vec<Survivor> {
    let mut kept: Vec<(u32, f32)> = candidates
        .iter()
        .filter(|&(_, l)| l > f32::NEG_INFINITY)
        .collect();
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let max = kept.first().map_or(0.0, |&(_, l)| l as f64);
    let weights: Vec<f64> = kept.iter().map(|&(_, l)| (l as f64 - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    kept.iter()
        .zip(&weights)
        .map(|(&(id, logit), &w)| Survivor {
            id,
            logit,
            p: w / total,
        })
        .collect()
}

/// The softmax of `input` (NaN counting as `-inf`), in `f64`: the distribution before any stage.
pub fn input_probs(input: &[f32]) -> Vec<f64> {
    let finite = |l: f32| if l.is_nan() { f32::NEG_INFINITY } else { l };
    let max = input
        .iter()
        .map(|&l| finite(l))
        .fold(f32::NEG_INFINITY, f32::max) as f64;
    let weights: Vec<f64> = input
        .iter()
        .map(|&l| (finite(l) as f64 - max).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// How much of a step to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every survivor.
    Full,
    /// Only the first `n` survivors in rank order.
    Top(usize),
}

/// The text form of one step: the outcome (selected token or error), the number of survivors
/// and the mass they had in the input distribution, then one line per survivor
/// (`id  logit  p`, floats to six significant digits).
pub fn render(
    input: &[f32],
    candidates: &Candidates,
    outcome: &Result<u32, Error>,
    detail: Detail,
) -> String {
    let list = survivors(candidates);
    let finite_in = input.iter().filter(|&&l| l > f32::NEG_INFINITY).count();
    let probs = input_probs(input);
    let mass: f64 = list
        .iter()
        .map(|s| probs.get(s.id as usize).copied().unwrap_or(0.0))
        .sum();
    let mut out = String::new();
    match outcome {
        Ok(id) => out.push_str(&format!("selected: {id}\n")),
        Err(e) => out.push_str(&format!("error: {e}\n")),
    }
    out.push_str(&format!(
        "survivors: {} of {finite_in} finite; their mass in the input: {}\n",
        list.len(),
        sig6(mass)
    ));
    let shown = match detail {
        Detail::Full => list.len(),
        Detail::Top(n) => n.min(list.len()),
    };
    if shown < list.len() {
        out.push_str(&format!("top {shown}:\n"));
    }
    out.push_str(&format!("{:>8} {:>12} {:>12}\n", "id", "logit", "p"));
    for s in &list[..shown] {
        out.push_str(&format!(
            "{:>8} {:>12} {:>12}\n",
            s.id,
            sig6(s.logit as f64),
            sig6(s.p)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survivors_are_finite_ranked_and_renormalized() {
        let c = Candidates::from_sparse(vec![4, 2, 9], vec![0.0, f32::NEG_INFINITY, 3f32.ln()], 10)
            .unwrap();
        let s = survivors(&c);
        assert_eq!(s.iter().map(|s| s.id).collect::<Vec<_>>(), vec![9, 4]);
        assert!((s[0].p - 0.75).abs() < 1e-7 && (s[1].p - 0.25).abs() < 1e-7);
    }

    #[test]
    fn render_reports_mass_in_the_input() {
        let input = [0.0, 0.0, f32::NAN, 0.0];
        let mut c = Candidates::from_logits(&input);
        c.keep_top(2);
        let text = render(&input, &c, &Ok(0), Detail::Full);
        assert!(
            text.starts_with(
                "selected: 0\nsurvivors: 2 of 3 finite; their mass in the input: 0.666667\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("       1            0          0.5\n"),
            "{text}"
        );
    }
}
