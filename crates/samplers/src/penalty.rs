//! `penalty(repeat, frequency, presence, last_n)`: repetition, frequency and presence penalties
//! over the last `last_n` tokens of the history.
//!
//! # Formula
//! Let `W` be the last `last_n` tokens of [`Context::history`] (the prompt included) and `c_t` the
//! number of times token `t` occurs in `W`. For every distinct `t` in `W` that is a candidate:
//! ```text
//! l_t ← l_t · repeat   if l_t < 0
//! l_t ← l_t / repeat   if l_t > 0          (l_t = 0 stays 0)
//! l_t ← l_t − (c_t · frequency + presence)
//! ```
//! The repetition part is applied once per distinct token whatever its count; only the frequency
//! part grows with the count. Tokens outside the window are untouched.
//!
//! # Reference
//! llama.cpp `llama_sampler_penalties` (CTRL repetition penalty with its sign fix, plus OpenAI
//! frequency and presence penalties, arithmetic in `f32` in the same order); Keskar et al., *CTRL*
//! (arXiv:1909.05858); HF `RepetitionPenaltyLogitsProcessor` for the repetition part (HF
//! multiplies when `l < 0` where llama.cpp multiplies when `l <= 0`: the same result, as
//! `0 · r = 0 / r`).
//!
//! # Edge cases
//! - Neutral: `repeat = 1, frequency = 0, presence = 0`, or `last_n = 0`: the stage is an
//!   identity. There is no `-1` meaning "the whole context" (llama.cpp removed it too); pass a
//!   `last_n` at least as long as the context instead.
//! - The stage is stateless: it reads the window from `cx.history` on every step, so it needs no
//!   `accept` and sees exactly the history the caller passes, the prompt included (as llama.cpp's
//!   server and HF do; vLLM counts only generated tokens for frequency and presence).
//! - Ids in the history beyond the vocabulary, or not among the candidates, are ignored.
//! - A masked (`-inf`) candidate stays masked. Results stay valid logits: an overflow to `+inf`
//!   (a tiny `repeat`, a huge negative `presence`) saturates to `f32::MAX`, a NaN (`inf − inf`)
//!   becomes `-inf`, as loading treats NaN. Parameters beyond the `f32` range saturate when
//!   converted.
//! - `frequency` and `presence` may be any finite number, negative ones rewarding repetition.
//!   OpenAI bounds them to `[-2, 2]`; sieve follows llama.cpp, which does not bound them, so that
//!   a large `presence` can all but ban repeats.
//!
//! # Cost
//! `O(w log w)` for the window of `w` tokens (it is sorted to count), then on dense candidates one
//! direct write per distinct token; the vocabulary is not scanned. On sparse candidates each
//! candidate is looked up by binary search in the window's distinct ids, `O(n log w)`.

use alloc::vec::Vec;

use sieve_core::{
    math, BuildContext, Candidates, Context, Error, Footprint, Params, Range, Sampler, Stage,
};

/// The `penalty` stage.
#[derive(Debug, Clone)]
pub struct Penalty {
    repeat: f32,
    frequency: f32,
    presence: f32,
    last_n: usize,
    /// Scratch: the window, sorted.
    window: Vec<u32>,
    /// Scratch: `(id, count)` of every distinct token of the window, by ascending id.
    counts: Vec<(u32, u32)>,
    /// Scratch: `counts` by hash of the id (open addressing, linear probing; index + 1, 0
    /// for an empty slot), for looking up sparse candidates.
    slots: Vec<u32>,
}

impl Penalty {
    /// Penalizes the tokens of the last `last_n` history tokens: divides positive logits by
    /// `repeat` (multiplies negative ones), then subtracts `count · frequency + presence`.
    pub fn new(repeat: f32, frequency: f32, presence: f32, last_n: usize) -> Self {
        Penalty {
            repeat,
            frequency,
            presence,
            last_n,
            window: Vec::new(),
            counts: Vec::new(),
            slots: Vec::new(),
        }
    }

    /// Whether the parameters make this stage an identity.
    pub fn is_neutral(&self) -> bool {
        self.last_n == 0 || (self.repeat == 1.0 && self.frequency == 0.0 && self.presence == 0.0)
    }

    /// The penalized logit of a token seen `count` times.
    fn penalize(&self, logit: f32, count: u32) -> f32 {
        if logit == f32::NEG_INFINITY {
            return logit;
        }
        let scaled = if logit < 0.0 {
            logit * self.repeat
        } else if logit > 0.0 {
            logit / self.repeat
        } else {
            logit
        };
        math::sanitize(scaled - (count as f32 * self.frequency + self.presence))
    }

    /// Fills `counts` with the distinct tokens of `window` and their counts, by ascending id.
    fn count(&mut self, window: &[u32]) {
        self.window.clear();
        self.window.extend_from_slice(window);
        self.window.sort_unstable();
        self.counts.clear();
        for &id in &self.window {
            match self.counts.last_mut() {
                Some((last, n)) if *last == id => *n += 1,
                _ => self.counts.push((id, 1)),
            }
        }
    }
}

impl Penalty {
    /// Fills `slots` with the positions of `counts` by hash of their ids: a table of at least
    /// twice as many slots (a power of two), so probes are short.
    fn index_counts(&mut self) {
        let size = (2 * self.counts.len()).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(size, 0);
        for (j, &(id, _)) in self.counts.iter().enumerate() {
            let mut at = slot_of(id, size);
            while self.slots[at] != 0 {
                at = (at + 1) & (size - 1);
            }
            self.slots[at] = j as u32 + 1;
        }
    }

    /// How many times `id` occurs in the window (`None`: not at all), from `slots`.
    fn count_of(&self, id: u32) -> Option<u32> {
        let size = self.slots.len();
        let mut at = slot_of(id, size);
        loop {
            let j = self.slots[at];
            if j == 0 {
                return None;
            }
            let (t, n) = self.counts[j as usize - 1];
            if t == id {
                return Some(n);
            }
            at = (at + 1) & (size - 1);
        }
    }
}

/// The home slot of `id` in a table of `size` slots (a power of two, at least 2): Fibonacci
/// hashing, the top bits of the id times 2^64 / φ.
fn slot_of(id: u32, size: usize) -> usize {
    let bits = size.trailing_zeros();
    (u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

impl Sampler for Penalty {
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        if self.is_neutral() || candidates.is_empty() {
            return Ok(());
        }
        let start = cx.history.len().saturating_sub(self.last_n);
        let window = &cx.history[start..];
        if window.is_empty() {
            return Ok(());
        }
        self.count(window);
        let this = &*self;
        if candidates.is_dense() {
            for &(id, n) in &this.counts {
                let i = id as usize;
                if i < candidates.len() {
                    candidates.set_logit(i, this.penalize(candidates.logit(i), n));
                }
            }
        } else {
            self.index_counts();
            let this = &*self;
            let (ids, logits) = candidates.parts_mut();
            for (&id, l) in ids.iter().zip(logits.iter_mut()) {
                if let Some(n) = this.count_of(id) {
                    *l = this.penalize(*l, n);
                }
            }
        }
        Ok(())
    }

    /// The tokens of the window (none when neutral or the window is empty).
    fn footprint(&mut self, cx: &Context<'_>, touched: &mut Vec<u32>) -> Footprint {
        let window = &cx.history[cx.history.len().saturating_sub(self.last_n)..];
        if self.is_neutral() || window.is_empty() {
            return Footprint::Nothing;
        }
        self.count(window);
        touched.extend(self.counts.iter().map(|&(id, _)| id));
        Footprint::Tokens
    }
}

/// The parameters of `penalty`.
#[derive(Debug, Clone, Params)]
pub struct PenaltyParams {
    /// repetition penalty: positive logits divided, negative multiplied; 1 = off
    #[param(default = 1.0, range = Range::greater_than(0.0))]
    pub repeat: f32,
    /// subtracted once per occurrence in the window; 0 = off
    #[param(default = 0.0, range = Range::open(f64::NEG_INFINITY, f64::INFINITY))]
    pub frequency: f32,
    /// subtracted once from every token in the window; 0 = off
    #[param(default = 0.0, range = Range::open(f64::NEG_INFINITY, f64::INFINITY))]
    pub presence: f32,
    /// window: the last last_n tokens of the history, prompt included; 0 = off
    #[param(default = 64, range = Range::closed(0.0, u32::MAX as f64))]
    pub last_n: usize,
}

impl Stage for Penalty {
    const NAME: &'static str = "penalty";
    const DOC: &'static str =
        "repetition (CTRL), frequency and presence penalties over the last last_n tokens";
    const ALIASES: &'static [&'static str] = &[
        "repetition_penalty",
        "repeat_penalty",
        "penalties",
        "frequency_penalty",
        "presence_penalty",
    ];
    type Params = PenaltyParams;
    fn new(p: PenaltyParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Penalty::new(p.repeat, p.frequency, p.presence, p.last_n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_core::{Args, BuildContext, Value};

    /// Sparse candidates (looked up through the hash table) get exactly the logits dense
    /// ones get (looked up by id), with windows whose ids crowd the table: repeated ids, ids
    /// a power of two apart, a window longer than the table's minimum.
    #[test]
    fn sparse_candidates_are_penalized_as_dense_ones_are() {
        let n = 5000u32;
        let logits: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 113) as f32 / 9.0 - 6.0)
            .collect();
        let windows: [Vec<u32>; 4] = [
            vec![3, 3, 3, 17],
            (0..9)
                .map(|k| 1u32 << k)
                .chain([256, 512, 1024, 2048, 4096])
                .collect(),
            (0..300).map(|i| (i * 37) % n).collect(),
            (0..64).map(|i| 4096 - 64 * i).collect(),
        ];
        for window in &windows {
            let mut p = Penalty::new(1.3, 0.25, 0.5, 1000);
            let dense = run(&mut p, &logits, window);
            // Every third id, in reverse: sparse, in no id order.
            let ids: Vec<u32> = (0..n).rev().filter(|i| i % 3 != 1).collect();
            let values: Vec<f32> = ids.iter().map(|&i| logits[i as usize]).collect();
            let mut c = Candidates::from_sparse(ids, values, n as usize).unwrap();
            p.apply(&mut c, &Context::with_history(window)).unwrap();
            for (id, x) in c.iter() {
                assert_eq!(x.to_bits(), dense[id as usize].1.to_bits(), "id {id}");
            }
        }
    }

    fn run(p: &mut Penalty, logits: &[f32], history: &[u32]) -> Vec<(u32, f32)> {
        let mut c = Candidates::from_logits(logits);
        p.apply(&mut c, &Context::with_history(history)).unwrap();
        c.iter().collect()
    }

    fn ids(logits: &[f32]) -> Vec<(u32, f32)> {
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect()
    }

    #[test]
    fn neutral_parameters_are_identities() {
        let logits = [2.0, -1.0, 0.5];
        let history = [0, 1, 1, 2];
        for mut p in [
            Penalty::new(1.0, 0.0, 0.0, 64),
            Penalty::new(2.0, 1.0, 1.0, 0),
        ] {
            assert!(p.is_neutral());
            let mut c = Candidates::from_logits(&logits);
            p.apply(&mut c, &Context::with_history(&history)).unwrap();
            assert!(c.is_dense());
            assert_eq!(c.iter().collect::<Vec<_>>(), ids(&logits));
        }
        assert!(!Penalty::new(1.0, 0.0, 0.5, 64).is_neutral());
    }

    #[test]
    fn repeat_divides_positive_multiplies_negative_keeps_zero() {
        // repeat = 2, history {0, 1, 2} (id 0 twice): 2/2 = 1, −1·2 = −2, 0 stays 0; id 3 unseen.
        // The repetition part ignores the count.
        let got = run(
            &mut Penalty::new(2.0, 0.0, 0.0, 64),
            &[2.0, -1.0, 0.0, 3.0],
            &[0, 1, 2, 0],
        );
        assert_eq!(got, ids(&[1.0, -2.0, 0.0, 3.0]));
    }

    #[test]
    fn frequency_counts_occurrences_and_presence_counts_once() {
        // frequency 0.5, presence 0.25: id 1 seen 3× → 1 − (3·0.5 + 0.25) = −0.75;
        // id 2 seen once → 1 − (0.5 + 0.25) = 0.25; id 0 unseen stays 1.
        let got = run(
            &mut Penalty::new(1.0, 0.5, 0.25, 64),
            &[1.0, 1.0, 1.0],
            &[1, 1, 2, 1],
        );
        assert_eq!(got, ids(&[1.0, -0.75, 0.25]));
    }

    #[test]
    fn repeat_then_frequency() {
        // repeat 2, frequency 1: id 0 (logit 4, seen twice) → 4/2 − 2·1 = 0;
        // id 1 (logit −1, seen once) → −1·2 − 1 = −3.
        let got = run(
            &mut Penalty::new(2.0, 1.0, 0.0, 64),
            &[4.0, -1.0],
            &[0, 1, 0],
        );
        assert_eq!(got, ids(&[0.0, -3.0]));
    }

    #[test]
    fn only_the_last_n_tokens_count() {
        // history [0, 0, 1, 2]; frequency 1.
        let logits = [0.0, 0.0, 0.0];
        let history = [0, 0, 1, 2];
        // last_n = 2 → window [1, 2]: id 0 untouched.
        assert_eq!(
            run(&mut Penalty::new(1.0, 1.0, 0.0, 2), &logits, &history),
            ids(&[0.0, -1.0, -1.0])
        );
        // last_n = 3 → window [0, 1, 2]: id 0 counted once, not twice.
        assert_eq!(
            run(&mut Penalty::new(1.0, 1.0, 0.0, 3), &logits, &history),
            ids(&[-1.0, -1.0, -1.0])
        );
        // last_n beyond the history → all of it: id 0 counted twice.
        assert_eq!(
            run(&mut Penalty::new(1.0, 1.0, 0.0, 100), &logits, &history),
            ids(&[-2.0, -1.0, -1.0])
        );
    }

    #[test]
    fn masked_stays_masked_and_unknown_ids_are_ignored() {
        let got = run(
            &mut Penalty::new(1.5, 1.0, 1.0, 64),
            &[f32::NEG_INFINITY, 3.0],
            &[0, 7, 1_000_000],
        );
        assert_eq!(got, ids(&[f32::NEG_INFINITY, 3.0]));
        assert_eq!(
            run(&mut Penalty::new(1.5, 1.0, 1.0, 64), &[1.0], &[]),
            ids(&[1.0])
        );
    }

    #[test]
    fn results_stay_valid_logits() {
        // 3e38 − (−3e38) overflows to +inf in f32 → saturates to f32::MAX.
        let got = run(&mut Penalty::new(1.0, 0.0, -3e38, 64), &[3e38], &[0]);
        assert_eq!(got, ids(&[f32::MAX]));
        // A repeat of 1e-40 makes 1 / 1e-40 overflow to +inf; subtracting 1·inf + 0 gives NaN,
        // which becomes −inf.
        let got = run(
            &mut Penalty::new(1e-40, f32::INFINITY, 0.0, 64),
            &[1.0],
            &[0],
        );
        assert_eq!(got, ids(&[f32::NEG_INFINITY]));
    }

    #[test]
    fn sparse_candidates_match_dense() {
        let logits = [1.0, -2.0, 0.5, 3.0, -0.5];
        let history = [4, 3, 3, 0, 9];
        let mut dense = Penalty::new(1.3, 0.2, 0.1, 4);
        let mut want = run(&mut dense, &logits, &history);
        want.sort_by_key(|&(id, _)| id);
        // The same tokens as sparse candidates in another order.
        let order = [3u32, 0, 4, 2, 1];
        let mut c = Candidates::from_sparse(
            order.to_vec(),
            order.iter().map(|&i| logits[i as usize]).collect(),
            logits.len(),
        )
        .unwrap();
        Penalty::new(1.3, 0.2, 0.1, 4)
            .apply(&mut c, &Context::with_history(&history))
            .unwrap();
        let mut got: Vec<_> = c.iter().collect();
        got.sort_by_key(|&(id, _)| id);
        assert_eq!(got, want);
        // Window [3, 3, 0, 9]: id 3 → 3/1.3 − (2·0.2 + 0.1); id 0 → 1/1.3 − (0.2 + 0.1).
        assert_eq!(want[3].1, 3.0f32 / 1.3 - (2.0 * 0.2 + 0.1));
        assert_eq!(want[0].1, 1.0f32 / 1.3 - (0.2 + 0.1));
        assert_eq!(want[4].1, -0.5);
    }

    #[test]
    fn pending_temperature_is_applied_first() {
        // Logit 4 scaled by 0.5 is 2; then / 2 → 1.
        let mut c = Candidates::from_logits(&[4.0, 1.0]);
        c.scale_logits(0.5);
        Penalty::new(2.0, 0.0, 0.0, 64)
            .apply(&mut c, &Context::with_history(&[0]))
            .unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), ids(&[1.0, 0.5]));
    }

    #[test]
    fn schema_order_and_defaults() {
        let e = sieve_core::StageEntry::of::<Penalty>();
        let names: Vec<&str> = e.info.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["repeat", "frequency", "presence", "last_n"]);
        let defaults: Vec<_> = e
            .info
            .params
            .iter()
            .map(|p| p.default.clone().unwrap())
            .collect();
        assert_eq!(
            defaults,
            [
                Value::Float(1.0),
                Value::Float(0.0),
                Value::Float(0.0),
                Value::Int(64)
            ]
        );
        let repeat = e.info.param("repeat").unwrap();
        assert!(repeat.check(&Value::Float(0.0)).is_err());
        assert!(repeat.check(&Value::Float(f64::INFINITY)).is_err());
        assert!(e
            .info
            .param("presence")
            .unwrap()
            .check(&Value::Float(f64::NEG_INFINITY))
            .is_err());
        assert!(e
            .info
            .param("last_n")
            .unwrap()
            .check(&Value::Int(-1))
            .is_err());

        let args = Args::new(
            "penalty",
            vec![
                ("repeat".into(), Value::Float(2.0)),
                ("frequency".into(), Value::Float(0.0)),
                ("presence".into(), Value::Float(0.0)),
                ("last_n".into(), Value::Int(64)),
            ],
        );
        let mut stage = (e.build)(&args, &BuildContext::default()).unwrap();
        let mut c = Candidates::from_logits(&[2.0, 2.0]);
        stage.apply(&mut c, &Context::with_history(&[1])).unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), ids(&[2.0, 1.0]));
    }
}
