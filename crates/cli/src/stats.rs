//! Summary statistics of timing samples.

/// The median and 90th percentile of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The 50th percentile.
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
}

impl Summary {
    /// Summarizes `samples` (in any order); `None` when there is none or one is NaN.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            median: quantile(&sorted, 0.5),
            p90: quantile(&sorted, 0.9),
        })
    }
}

/// The `q`-quantile of ascending `sorted` samples, interpolating linearly between the two
/// nearest ranks (position `q·(n−1)`, the usual "type 7" definition; numpy's default).
///
/// # Panics
/// If `sorted` is empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        // 1..=10: median at position 4.5 → 5.5; p90 at position 8.1 → 9.1.
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.median, 5.5);
        assert!((s.p90 - 9.1).abs() < 1e-12);
        assert_eq!(
            Summary::of(&[3.0]),
            Some(Summary {
                median: 3.0,
                p90: 3.0
            })
        );
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.5), 2.0);
    }

    #[test]
    fn nothing_to_summarize() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }
}
