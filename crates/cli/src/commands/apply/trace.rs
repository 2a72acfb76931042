//! `sieve apply --trace`: the distribution before the first stage and after each stage,
//! rendered as plain text (no colours, so the output is the same on a terminal and in a file).
//!
//! For each step: the stage, how many finite candidates remain (and how many the stage
//! removed or masked), the entropy over the survivors in nats, the top 5 tokens with their
//! probabilities, and the 10 most likely tokens as a bar chart scaled to the largest
//! probability. The selector's step names the selected token and marks its row.

use std::fmt::Write as _;

use sieve::outcome::{entropy, StageStep as Step};
use sieve_core::Candidates;

use super::output::{table_header, table_row};

/// How many tokens the one-line summary names.
const TOP_LINE: usize = 5;
/// How many tokens the bar chart shows.
const CHART_ROWS: usize = 10;
/// Width in cells of the longest bar.
const BAR_WIDTH: usize = 30;
/// Partial cells, in eighths: `PARTIAL[k]` is `k/8` of a cell.
const PARTIAL: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/// The steps of one `apply` run.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The run's seed.
    pub seed: u64,
    /// The pipeline in canonical form.
    pub pipeline: String,
    /// The input, then one step per stage that ran.
    pub steps: Vec<Step>,
}

impl Trace {
    /// A trace that starts with the input candidates.
    pub fn new(seed: u64, pipeline: String, input: &Candidates) -> Trace {
        Trace {
            seed,
            pipeline,
            steps: vec![Step::observe("input", input)],
        }
    }

    /// Records the candidates after `stage`.
    pub fn push(&mut self, stage: &str, candidates: &Candidates) {
        self.steps.push(Step::observe(stage, candidates));
    }

    /// The trace as text, ending with a blank line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "pipeline: {}", self.pipeline);
        let _ = writeln!(out, "seed: {}", self.seed);
        let mut previous = None;
        for (i, step) in self.steps.iter().enumerate() {
            out.push('\n');
            let title = if i == 0 {
                step.stage.clone()
            } else {
                format!("stage {i}: {}", step.stage)
            };
            render_step(&mut out, &title, step, previous);
            previous = Some(step.survivors.len());
        }
        out.push('\n');
        out
    }
}

/// One step: summary line, top-5 line, bar chart.
fn render_step(out: &mut String, title: &str, step: &Step, previous: Option<usize>) {
    let n = step.survivors.len();
    let _ = write!(
        out,
        "{title}: {n} candidate{}",
        if n == 1 { "" } else { "s" }
    );
    if let Some(before) = previous.filter(|&before| before > n) {
        let _ = write!(out, " ({} removed)", before - n);
    }
    let _ = write!(out, ", entropy {:.4} nats", entropy(&step.survivors));
    if let Some(id) = step.selected {
        let _ = write!(out, ", selected {id}");
    }
    out.push('\n');
    let top: Vec<String> = step
        .survivors
        .iter()
        .take(TOP_LINE)
        .map(|s| format!("{} ({:.4})", s.id, s.p))
        .collect();
    let _ = writeln!(out, "  top {}: {}", top.len(), top.join(", "));
    let max_p = step.survivors.first().map_or(0.0, |s| s.p);
    let _ = writeln!(out, "  {}", table_header());
    for s in step.survivors.iter().take(CHART_ROWS) {
        let bar = bar(s.p, max_p);
        let mark = if step.selected == Some(s.id) {
            "  ◀ selected"
        } else {
            ""
        };
        let _ = writeln!(out, "  {}  {}{mark}", table_row(s), bar);
    }
    if n > CHART_ROWS {
        let _ = writeln!(out, "  … {} more", n - CHART_ROWS);
    }
}

/// A bar of `p / max_p · BAR_WIDTH` cells in eighths of a cell (`█`, then one of `▉▊▋▌▍▎▏`),
/// padded with spaces to the full width; a positive `p` always shows at least `▏`.
fn bar(p: f32, max_p: f32) -> String {
    let eighths = if max_p > 0.0 {
        ((p as f64 / max_p as f64) * (BAR_WIDTH * 8) as f64).round() as usize
    } else {
        0
    };
    let eighths = if p > 0.0 { eighths.max(1) } else { eighths }.min(BAR_WIDTH * 8);
    let mut bar = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        bar.push(PARTIAL[eighths % 8]);
    }
    let cells = eighths.div_ceil(8);
    bar.extend(std::iter::repeat_n(' ', BAR_WIDTH - cells));
    bar.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_scaled_in_eighths() {
        assert_eq!(bar(1.0, 1.0), "█".repeat(BAR_WIDTH));
        assert_eq!(bar(0.5, 1.0), "█".repeat(BAR_WIDTH / 2));
        // 1/16 of 30 cells = 1.875 cells = 1 full cell and 7 eighths.
        assert_eq!(bar(1.0 / 16.0, 1.0), "█▉");
        assert_eq!(bar(1e-9, 1.0), "▏");
        assert_eq!(bar(0.0, 1.0), "");
        assert_eq!(bar(0.0, 0.0), "");
    }

    #[test]
    fn steps_sort_by_probability_and_note_selection() {
        let mut c = Candidates::from_logits(&[0.0, 2.0, f32::NEG_INFINITY, 1.0]);
        let step = Step::observe("x", &c);
        assert_eq!(
            step.survivors.iter().map(|s| s.id).collect::<Vec<_>>(),
            vec![1, 3, 0]
        );
        assert_eq!(step.selected, None);
        c.select(3);
        assert_eq!(Step::observe("greedy", &c).selected, Some(3));
    }

    #[test]
    fn render_by_hand() {
        // logits [ln 1, ln 3, -inf, ln 4] → p = [1/8, 3/8, 0, 4/8]; top_k(2) keeps 3 and 1.
        let logits = [0.0, 3f32.ln(), f32::NEG_INFINITY, 4f32.ln()];
        let input = Candidates::from_logits(&logits);
        let mut trace = Trace::new(7, "top_k(k=2) | greedy".into(), &input);
        let mut c = input.clone();
        c.keep_top(2);
        trace.push("top_k", &c);
        c.select(0);
        trace.push("greedy", &c);
        let want = "\
pipeline: top_k(k=2) | greedy
seed: 7

input: 3 candidates, entropy 0.9743 nats
  top 3: 3 (0.5000), 1 (0.3750), 0 (0.1250)
       token         logit         p
           3        1.3863  0.500000  ██████████████████████████████
           1        1.0986  0.375000  ██████████████████████▌
           0        0.0000  0.125000  ███████▌

stage 1: top_k: 2 candidates (1 removed), entropy 0.6829 nats
  top 2: 3 (0.5714), 1 (0.4286)
       token         logit         p
           3        1.3863  0.571429  ██████████████████████████████
           1        1.0986  0.428571  ██████████████████████▌

stage 2: greedy: 2 candidates, entropy 0.6829 nats, selected 3
  top 2: 3 (0.5714), 1 (0.4286)
       token         logit         p
           3        1.3863  0.571429  ██████████████████████████████  ◀ selected
           1        1.0986  0.428571  ██████████████████████▌

";
        assert_eq!(trace.render(), want);
    }

    #[test]
    fn long_distributions_are_cut_after_ten_rows() {
        let logits: Vec<f32> = (0..12).map(|i| -(i as f32)).collect();
        let c = Candidates::from_logits(&logits);
        let text = Trace::new(0, "greedy".into(), &c).render();
        assert!(
            text.contains("  top 5: 0 (0.6321), 1 (0.2325), 2 (0.0855), 3 (0.0315), 4 (0.0116)\n"),
            "{text}"
        );
        assert!(text.contains("\n  … 2 more\n"), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("          ")).count(),
            10,
            "{text}"
        );
    }
}
