//! The result of `sieve apply`, as text or JSON, and the candidate table both `apply` and
//! `--trace` print.

use std::fmt::Write as _;

use serde::Serialize;

use sieve::outcome::Survivor;

/// What `sieve apply` reports.
///
/// Serialized as `{"candidates": [{"id", "logit", "p"}, …], "selected": id, "seed": n}`:
/// the survivors after the last stage in the order the pipeline left them (masked candidates
/// left out, `p` renormalized over the survivors), the selected token id, and the run's seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The survivors after the last stage.
    pub candidates: Vec<Survivor>,
    /// The selected token id.
    pub selected: u32,
    /// The seed the pipeline was built with (`--seed`, or the random one chosen).
    pub seed: u64,
}

/// The header of a candidate table, aligned with [`table_row`].
pub fn table_header() -> String {
    format!("{:>10}  {:>12}  {:>8}", "token", "logit", "p")
}

/// One candidate as a table row: id, logit (4 decimals), probability (6 decimals).
pub fn table_row(s: &Survivor) -> String {
    format!("{:>10}  {:>12.4}  {:>8.6}", s.id, s.logit, s.p)
}

impl Outcome {
    /// Human-readable: the selected token, the seed, then every survivor in pipeline order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "selected: {}", self.selected);
        let _ = writeln!(out, "seed: {}", self.seed);
        let _ = writeln!(out, "survivors: {}", self.candidates.len());
        let _ = writeln!(out, "{}", table_header());
        for s in &self.candidates {
            let _ = writeln!(out, "{}", table_row(s));
        }
        out
    }

    /// One line of JSON (the candidate list grows with the vocabulary, so it is not indented).
    pub fn json(&self) -> String {
        // Survivors are finite and probabilities lie in [0, 1], so every number is valid JSON.
        let mut text = serde_json::to_string(self).expect("an Outcome holds only finite numbers");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome() -> Outcome {
        Outcome {
            candidates: vec![
                Survivor {
                    id: 2,
                    logit: 3.0,
                    p: 0.731_058_6,
                },
                Survivor {
                    id: 10,
                    logit: -1.25,
                    p: 0.268_941_4,
                },
            ],
            selected: 2,
            seed: 7,
        }
    }

    #[test]
    fn text_lists_selection_seed_and_table() {
        let want = "\
selected: 2
seed: 7
survivors: 2
     token         logit         p
         2        3.0000  0.731059
        10       -1.2500  0.268941
";
        assert_eq!(outcome().text(), want);
    }

    #[test]
    fn json_has_the_documented_shape() {
        let want = r#"{"candidates":[{"id":2,"logit":3.0,"p":0.7310586},{"id":10,"logit":-1.25,"p":0.2689414}],"selected":2,"seed":7}"#;
        assert_eq!(outcome().json(), format!("{want}\n"));
    }
}
