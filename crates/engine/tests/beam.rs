//! Beam search: hand-checked cases, the option checks, and two independent checks of the
//! search itself: a step-by-step transcription of transformers' `_beam_search` (its tensors
//! as plain vectors, its −1e9 masks included) must give bit-identical hypotheses and scores,
//! and with enough beams the search must return the best sequences of an exhaustive
//! enumeration.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use sieve_core::{Candidates, Context, Pipeline, Sampler};
use sieve_engine::beam::log_softmax;
use sieve_engine::{
    beam_search, BatchModel, BeamOptions, BeamOptionsError, EarlyStopping, Error, Feed,
    FinishReason, LogitsAt, Result, SeqId,
};
use sieve_samplers::dist::Dist;
use sieve_samplers::greedy::Greedy;
use sieve_samplers::no_repeat_ngram::NoRepeatNgram;
use sieve_samplers::penalty::Penalty;
use sieve_samplers::top_k::TopK;

use common::HashModel;

/// The logits after a history.
type LogitsFn = Box<dyn Fn(&[u32]) -> Vec<f32>>;

/// Expected hypotheses: tokens and score.
type Want<'a> = &'a [(&'a [u32], f64)];

/// A [`BatchModel`] whose logits after a history are `logits(history)`; it records every
/// step's feeds and how many sequences it holds.
struct FnModel {
    logits: LogitsFn,
    vocab: usize,
    seqs: BTreeMap<u32, Vec<u32>>,
    next: u32,
    /// Per step, the number of tokens of each feed.
    steps: Vec<Vec<usize>>,
    forks: usize,
    /// A step with this index fails.
    fail_at: Option<usize>,
}

impl FnModel {
    fn new(vocab: usize, logits: impl Fn(&[u32]) -> Vec<f32> + 'static) -> Self {
        FnModel {
            logits: Box::new(logits),
            vocab,
            seqs: BTreeMap::new(),
            next: 0,
            steps: Vec::new(),
            forks: 0,
            fail_at: None,
        }
    }

    /// [`HashModel`]'s logits.
    fn hash(vocab: usize, sharpness: f32, salt: u64) -> Self {
        FnModel::boosted(vocab, sharpness, salt, &[], 0.0)
    }

    /// [`HashModel`]'s logits, `boost` added to those of `tokens` (EOS ids made likely, so
    /// that hypotheses finish early and often).
    fn boosted(vocab: usize, sharpness: f32, salt: u64, tokens: &[u32], boost: f32) -> Self {
        let h = HashModel::new(vocab, sharpness, salt);
        let tokens = tokens.to_vec();
        FnModel::new(vocab, move |history| {
            let mut row = h.logits_after(history);
            for &t in &tokens {
                row[t as usize] += boost;
            }
            row
        })
    }
}

impl BatchModel for FnModel {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn context_len(&self) -> usize {
        1024
    }
    fn open(&mut self) -> SeqId {
        self.next += 1;
        self.seqs.insert(self.next, Vec::new());
        SeqId(self.next)
    }
    fn fork(&mut self, seq: SeqId) -> Result<SeqId> {
        let tokens = self
            .seqs
            .get(&seq.0)
            .cloned()
            .ok_or(Error::UnknownSequence(seq))?;
        self.next += 1;
        self.forks += 1;
        self.seqs.insert(self.next, tokens);
        Ok(SeqId(self.next))
    }
    fn close(&mut self, seq: SeqId) {
        self.seqs.remove(&seq.0);
    }
    fn position(&self, seq: SeqId) -> Result<usize> {
        self.seqs
            .get(&seq.0)
            .map(Vec::len)
            .ok_or(Error::UnknownSequence(seq))
    }
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.seqs
            .get_mut(&seq.0)
            .ok_or(Error::UnknownSequence(seq))?
            .truncate(len);
        Ok(())
    }
    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>> {
        if self.fail_at == Some(self.steps.len()) {
            return Err(Error::Model("a device failure".into()));
        }
        for (i, f) in feeds.iter().enumerate() {
            self.position(f.seq)?;
            assert!(!f.tokens.is_empty());
            assert!(feeds[..i].iter().all(|g| g.seq != f.seq), "fed twice");
            assert_eq!(f.logits, LogitsAt::Last);
        }
        self.steps
            .push(feeds.iter().map(|f| f.tokens.len()).collect());
        Ok(feeds
            .iter()
            .map(|f| {
                let h = self.seqs.get_mut(&f.seq.0).unwrap();
                h.extend_from_slice(f.tokens);
                (self.logits)(h)
            })
            .collect())
    }
}

/// A stage whose state lives in `accept` alone: it bans every token it has accepted since
/// its reset, so a beam given the wrong history shows at once.
#[derive(Default)]
struct BanAccepted(Vec<u32>);

impl Sampler for BanAccepted {
    fn apply(
        &mut self,
        c: &mut Candidates,
        _cx: &Context<'_>,
    ) -> std::result::Result<(), sieve_core::Error> {
        for &t in &self.0 {
            if let Some(i) = c.position(t) {
                c.set_logit(i, f32::NEG_INFINITY);
            }
        }
        Ok(())
    }
    fn accept(&mut self, token: u32) {
        self.0.push(token);
    }
    fn reset(&mut self) {
        self.0.clear();
    }
}

/// The transforming stages a test runs before `greedy`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stages {
    None,
    Penalty,
    NoRepeat,
    Both,
    Ban,
}

const ALL_STAGES: [Stages; 5] = [
    Stages::None,
    Stages::Penalty,
    Stages::NoRepeat,
    Stages::Both,
    Stages::Ban,
];

fn pipeline(stages: Stages) -> Pipeline {
    let mut v: Vec<(String, Box<dyn Sampler>)> = Vec::new();
    if matches!(stages, Stages::Penalty | Stages::Both) {
        v.push((
            "penalty".into(),
            Box::new(Penalty::new(1.7, 0.0, 0.0, 4096)),
        ));
    }
    if matches!(stages, Stages::NoRepeat | Stages::Both) {
        v.push(("no_repeat_ngram".into(), Box::new(NoRepeatNgram::new(2))));
    }
    if stages == Stages::Ban {
        v.push(("ban".into(), Box::new(BanAccepted::default())));
    }
    v.push(("greedy".into(), Box::new(Greedy::new())));
    Pipeline::new(v)
}

fn pipelines(stages: Stages, n: usize) -> Vec<Pipeline> {
    (0..n).map(|_| pipeline(stages)).collect()
}

fn options(
    beams: usize,
    lp: f64,
    early: EarlyStopping,
    r: usize,
    max: usize,
    eos: &[u32],
) -> BeamOptions<'static> {
    BeamOptions {
        beams,
        length_penalty: lp,
        early_stopping: early,
        num_return: r,
        max_tokens: max,
        eos: eos.to_vec(),
        ..BeamOptions::new(beams)
    }
}

/// The processed log-probabilities after `history` with a fresh pipeline that accepted it
/// (the prompt included) — what every beam's own pipeline must give.
fn processed(model: &FnModel, stages: Stages, history: &[u32], prompt_len: usize) -> Vec<f32> {
    let mut row = (model.logits)(history);
    log_softmax(&mut row, &mut Vec::new());
    let mut p = pipeline(stages);
    for &t in history {
        p.accept(t);
    }
    let mut c = Candidates::from_logits(&row);
    let cx = Context {
        history,
        prompt_len,
        vocab: None,
        step: history.len() - prompt_len,
    };
    p.transform(&mut c, &cx).unwrap();
    let mut out = vec![f32::NEG_INFINITY; row.len()];
    for (id, l) in c.iter() {
        out[id as usize] = l;
    }
    out
}

/// The indices of the `k` largest values, largest first, ties to the lower index.
fn topk(xs: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[b].total_cmp(&xs[a]).then(a.cmp(&b)));
    idx.truncate(k);
    idx
}

/// transformers' `_beam_search` for one prompt, transcribed tensor by tensor onto vectors:
/// `N` running beams (all but the first at −1e9 at the start), `N` finished slots at −1e9,
/// the −1e9 masks, `topk` (ties to the lower index here). Returns `None` when the search
/// used a −1e9 placeholder (fewer finite continuations than `K`), which beam_search does not
/// model.
fn transformers_reference(
    model: &FnModel,
    stages: Stages,
    prompt: &[u32],
    o: &BeamOptions<'_>,
) -> Option<Vec<(Vec<u32>, f32)>> {
    const BIG: f32 = -1.0e9;
    let n = o.beams;
    let lp = o.length_penalty;
    let k = (1 + o.eos.len()).max(2) * n;
    let max_new = o.max_tokens;
    let mut run_seqs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut run_scores: Vec<f32> = (0..n).map(|i| if i == 0 { 0.0 } else { BIG }).collect();
    let mut fin_seqs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut fin_scores = vec![BIG; n];
    let mut fin_done = vec![false; n];
    let mut improvable = true;
    for cur in 0.. {
        let vocab = model.vocab;
        let mut flat = Vec::with_capacity(n * vocab);
        for (seq, &score) in run_seqs.iter().zip(&run_scores) {
            let history: Vec<u32> = prompt.iter().chain(seq).copied().collect();
            let row = processed(model, stages, &history, prompt.len());
            flat.extend(row.iter().map(|&x| x + score));
        }
        let top = topk(&flat, k);
        if top.iter().any(|&i| flat[i] <= -1.0e8) {
            return None;
        }
        let gen = cur + 1;
        let cand_seqs: Vec<Vec<u32>> = top
            .iter()
            .map(|&i| {
                let mut s = run_seqs[i / vocab].clone();
                s.push((i % vocab) as u32);
                s
            })
            .collect();
        let cand_scores: Vec<f32> = top.iter().map(|&i| flat[i]).collect();
        let hits: Vec<bool> = cand_seqs
            .iter()
            .map(|s| o.eos.contains(s.last().unwrap()) || gen >= max_new)
            .collect();
        // e. the running beams
        let masked: Vec<f32> = cand_scores
            .iter()
            .zip(&hits)
            .map(|(&s, &h)| s + f32::from(u8::from(h)) * BIG)
            .collect();
        let sel = topk(&masked, n);
        run_seqs = sel.iter().map(|&i| cand_seqs[i].clone()).collect();
        run_scores = sel.iter().map(|&i| masked[i]).collect();
        // f. the finished slots
        let denom = (gen as f64).powf(lp) as f32;
        let full = fin_done.iter().all(|&d| d) && o.early_stopping == EarlyStopping::True;
        let merged_scores: Vec<f32> = fin_scores
            .iter()
            .copied()
            .chain(cand_scores.iter().enumerate().map(|(i, &s)| {
                let mut x = s / denom;
                x += f32::from(u8::from(full)) * BIG;
                x += f32::from(u8::from(!improvable)) * BIG;
                x += f32::from(u8::from(!(hits[i] && i < n))) * BIG;
                x
            }))
            .collect();
        let merged_seqs: Vec<Vec<u32>> = fin_seqs.iter().chain(&cand_seqs).cloned().collect();
        let merged_done: Vec<bool> = fin_done
            .iter()
            .copied()
            .chain(hits.iter().enumerate().map(|(i, &h)| h && i < n))
            .collect();
        let sel = topk(&merged_scores, n);
        fin_seqs = sel.iter().map(|&i| merged_seqs[i].clone()).collect();
        fin_scores = sel.iter().map(|&i| merged_scores[i]).collect();
        fin_done = sel.iter().map(|&i| merged_done[i]).collect();
        // g. the stopping rules
        let hyp = if o.early_stopping == EarlyStopping::Never && lp > 0.0 {
            max_new
        } else {
            gen
        };
        let best = run_scores[0] / (hyp as f64).powf(lp) as f32;
        let worst = fin_scores.iter().copied().fold(f32::INFINITY, f32::min);
        improvable &= (0..n).any(|j| best > if fin_done[j] { worst } else { BIG });
        let open = !(fin_done.iter().all(|&d| d) && o.early_stopping == EarlyStopping::True);
        let valid = !hits.iter().all(|&h| h);
        if !(improvable && open && valid) {
            break;
        }
    }
    assert!(fin_done[..o.num_return].iter().all(|&d| d));
    Some(
        fin_seqs
            .into_iter()
            .zip(fin_scores)
            .take(o.num_return)
            .collect(),
    )
}

fn run(
    model: &mut FnModel,
    stages: Stages,
    prompt: &[u32],
    o: &BeamOptions<'_>,
) -> Vec<(Vec<u32>, f64, FinishReason)> {
    let out = beam_search(model, pipelines(stages, o.beams), prompt, o).unwrap();
    assert!(model.seqs.is_empty(), "every sequence is closed");
    out.hypotheses
        .into_iter()
        .map(|h| (h.tokens, h.score, h.finish))
        .collect()
}

/// A table model over 4 tokens (3 is EOS): `ln p` after the histories listed, uniform after
/// any other.
fn table(entries: &[(&[u32], [f64; 4])]) -> FnModel {
    let map: BTreeMap<Vec<u32>, [f64; 4]> = entries.iter().map(|(h, p)| (h.to_vec(), *p)).collect();
    FnModel::new(4, move |h| {
        let p = map.get(h).copied().unwrap_or([0.25; 4]);
        p.iter().map(|&x| x.ln() as f32).collect()
    })
}

fn assert_hypotheses(got: &[(Vec<u32>, f64, FinishReason)], want: &[(&[u32], f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((tokens, score, _), (wt, ws)) in got.iter().zip(want) {
        assert_eq!(tokens, wt, "{got:?}");
        assert!((score - ws).abs() < 1e-5, "{score} vs {ws} in {got:?}");
    }
}

#[test]
fn hand_checked_two_steps() {
    // Prompt [0]; 2 beams, EOS 3, so K = 4; 2 tokens at most; α = 1.
    // Step 1, after [0], p = (.15, .5, .3, .05): ranked 1 (ln .5 = −0.6931), 2 (−1.2040),
    //   0 (−1.8971), 3 (−2.9957). The EOS is ranked 4th, below N = 2: dropped.
    //   Beams: [1] −0.6931, [2] −1.2040.
    // Step 2 (the last: every continuation ends), after [0 1] p = (.1, .2, .3, .4), after
    //   [0 2] p = (.05, .05, .1, .8): [2 3] −1.2040 + ln .8 = −1.4271, [1 3] −0.6931 + ln .4
    //   = −1.6094, [1 2] −1.8971, [1 1] −2.3026 are the 4 best; the first 2 finish:
    //   [2 3] −1.4271 / 2 = −0.71356, [1 3] −1.6094 / 2 = −0.80472.
    // Greedy search would have found [1 3] only.
    let mut model = table(&[
        (&[0], [0.15, 0.5, 0.3, 0.05]),
        (&[0, 1], [0.1, 0.2, 0.3, 0.4]),
        (&[0, 2], [0.05, 0.05, 0.1, 0.8]),
    ]);
    let o = options(2, 1.0, EarlyStopping::False, 2, 2, &[3]);
    let got = run(&mut model, Stages::None, &[0], &o);
    let s23 = 0.3f64.ln() + 0.8f64.ln();
    let s13 = 0.5f64.ln() + 0.4f64.ln();
    assert_hypotheses(&got, &[(&[2, 3], s23 / 2.0), (&[1, 3], s13 / 2.0)]);
    assert!(got.iter().all(|h| h.2 == FinishReason::Eos));
    // One prefill of the prompt, then one step feeding both beams one token each; the
    // prompt's sequence was forked once, not prefilled twice.
    assert_eq!(model.steps, vec![vec![1], vec![1, 1]]);
    assert_eq!(model.forks, 1);

    // α = 0: plain sums, same order; R = 1 returns the best only.
    let o = options(2, 0.0, EarlyStopping::False, 1, 2, &[3]);
    let got = run(&mut model, Stages::None, &[0], &o);
    assert_hypotheses(&got, &[(&[2, 3], s23)]);
}

/// The table of the early-stopping case (see the test's comment).
fn early_table() -> FnModel {
    table(&[
        (&[0], [0.05, 0.5, 0.15, 0.3]),
        (&[0, 1], [0.1, 0.15, 0.05, 0.7]),
        (&[0, 2], [0.7, 0.1, 0.1, 0.1]),
        (&[0, 2, 0], [0.05, 0.05, 0.1, 0.8]),
        (&[0, 1, 1], [0.4, 0.3, 0.2, 0.1]),
    ])
}

#[test]
fn hand_checked_early_stopping_modes() {
    // Prompt [0], 2 beams, EOS 3 (K = 4), α = 1.
    // Step 1, after [0] p = (.05, .5, .15, .3): ranked 1 (−0.6931), 3 (−1.2040), 2 (−1.8971),
    //   0 (−2.9957). [3] is ranked 2nd ≤ N: finished, score −1.2040 / 1.
    //   Beams: [1] −0.6931, [2] −1.8971.
    // Step 2, after [0 1] p = (.1, .15, .05, .7), after [0 2] p = (.7, .1, .1, .1):
    //   [1 3] −0.6931 − 0.3567 = −1.0498 (EOS, rank 1: finished, −1.0498 / 2 = −0.5249),
    //   [2 0] −2.2538, [1 1] −2.5903, [1 0] −2.9957. Two hypotheses finished: N reached.
    //   Beams: [2 0] −2.2538, [1 1] −2.5903.
    //   - True stops here: [1 3] −0.5249, [3] −1.2040.
    //   - False: the best beam −2.2538 / 2 = −1.1269 > −1.2040, the worst kept: go on.
    //   - Never, T = 4: −2.2538 / 4 = −0.5635 > −1.2040: go on.
    // Step 3, after [0 2 0] p = (.05, .05, .1, .8), after [0 1 1] p = (.4, .3, .2, .1):
    //   [2 0 3] −2.2538 − 0.2231 = −2.4769 (EOS, rank 1: −2.4769 / 3 = −0.8256 replaces
    //   [3]), [1 1 0] −3.5066, [1 1 1] −3.7942, [1 1 2] −4.1997.
    //   - False: −3.5066 / 3 = −1.1689 is not above −0.8256: stop.
    //   - Never, T = 4: −3.5066 / 4 = −0.8767 is not above −0.8256: stop.
    //   - Never, T = 10: −3.5066 / 10 = −0.3507 is above: go on.
    let s3 = 0.3f64.ln();
    let s13 = 0.5f64.ln() + 0.7f64.ln();
    let s203 = 0.15f64.ln() + 0.7f64.ln() + 0.8f64.ln();
    let cases: [(EarlyStopping, usize, Want<'_>, usize); 3] = [
        (
            EarlyStopping::True,
            4,
            &[(&[1, 3], s13 / 2.0), (&[3], s3)],
            2,
        ),
        (
            EarlyStopping::False,
            4,
            &[(&[1, 3], s13 / 2.0), (&[2, 0, 3], s203 / 3.0)],
            3,
        ),
        (
            EarlyStopping::Never,
            4,
            &[(&[1, 3], s13 / 2.0), (&[2, 0, 3], s203 / 3.0)],
            3,
        ),
    ];
    for (early, max, want, steps) in cases {
        let mut model = early_table();
        let o = options(2, 1.0, early, 2, max, &[3]);
        let out = beam_search(&mut model, pipelines(Stages::None, 2), &[0], &o).unwrap();
        let got: Vec<_> = out
            .hypotheses
            .into_iter()
            .map(|h| (h.tokens, h.score, h.finish))
            .collect();
        assert_hypotheses(&got, want);
        assert_eq!(out.stats.generated_tokens, steps, "{early}");
        assert_eq!(
            model.steps.len(),
            steps,
            "{early}: one forward per step but the last"
        );
    }
    // Never with room to improve runs on, and agrees with the transcription of transformers.
    let mut model = early_table();
    let o = options(2, 1.0, EarlyStopping::Never, 2, 10, &[3]);
    let out = beam_search(&mut model, pipelines(Stages::None, 2), &[0], &o).unwrap();
    assert!(out.stats.generated_tokens > 3);
    let want = transformers_reference(&model, Stages::None, &[0], &o).unwrap();
    let got: Vec<_> = out
        .hypotheses
        .iter()
        .map(|h| (h.tokens.clone(), h.score as f32))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn hand_checked_negative_length_penalty() {
    // Prompt [0], 2 beams, EOS 3 (K = 4), α = −0.5 (a score is `sum · √len`), T = 4.
    // Step 1, after [0] p = (.01, .58, .04, .37): [1] −0.5447 runs, [3] −0.9943 finishes
    //   (score −0.9943), [2] −3.2189 runs.
    // Step 2, after [0 1] p = (.14, .425, .135, .30): [1 1] −1.4003 runs, [1 3] −1.7487
    //   finishes (−1.7487 · √2 = −2.4730), [1 0] −2.5108 runs. N = 2 finished.
    //   - True stops: [3], [1 3].
    //   - False, and Never (α ≤ 0: the current length): −1.4003 · √2 = −1.9803 > −2.4730,
    //     go on. (Waiting for T would give −1.4003 · 2 = −2.8006 and stop.)
    // Step 3, after [0 1 1] p = (.004, .003, .003, .99): [1 1 3] −1.4103 finishes with
    //   −1.4103 · √3 = −2.4427, better than [1 3]; the best beam, [1 0] + a uniform token at
    //   −3.8971, cannot come back: stop.
    let model = || {
        table(&[
            (&[0], [0.01, 0.58, 0.04, 0.37]),
            (&[0, 1], [0.14, 0.425, 0.135, 0.30]),
            (&[0, 1, 1], [0.004, 0.003, 0.003, 0.99]),
        ])
    };
    let s3 = 0.37f64.ln();
    let s13 = (0.58f64.ln() + 0.30f64.ln()) * 2f64.sqrt();
    let s113 = (0.58f64.ln() + 0.425f64.ln() + 0.99f64.ln()) * 3f64.sqrt();
    let cases: [(EarlyStopping, Want<'_>); 3] = [
        (EarlyStopping::True, &[(&[3], s3), (&[1, 3], s13)]),
        (EarlyStopping::False, &[(&[3], s3), (&[1, 1, 3], s113)]),
        (EarlyStopping::Never, &[(&[3], s3), (&[1, 1, 3], s113)]),
    ];
    for (early, want) in cases {
        let o = options(2, -0.5, early, 2, 4, &[3]);
        let got = run(&mut model(), Stages::None, &[0], &o);
        assert_hypotheses(&got, want);
    }
}

#[test]
fn equals_a_transcription_of_transformers_beam_search() {
    let mut compared = 0;
    let mut skipped = 0;
    let mut case = 0u64;
    for vocab in [16usize, 40, 300] {
        for beams in 1..=4 {
            for stages in ALL_STAGES {
                if stages == Stages::Ban && vocab < 40 || vocab == 300 && stages == Stages::Both {
                    continue;
                }
                for (lp, early) in [
                    (1.0, EarlyStopping::False),
                    (0.0, EarlyStopping::True),
                    (2.0, EarlyStopping::Never),
                    (-0.5, EarlyStopping::False),
                    (1.0, EarlyStopping::Never),
                    (2.0, EarlyStopping::True),
                    (-0.5, EarlyStopping::Never),
                ] {
                    case += 1;
                    let eos: &[u32] = match case % 3 {
                        0 => &[],
                        1 => &[5],
                        _ => &[5, 9],
                    };
                    let max = [1, 3, 7, 12][(case % 5 % 4) as usize];
                    let r = if case.is_multiple_of(2) { 1 } else { beams };
                    let prompt = [(case % 7) as u32, 2, (case % 11) as u32];
                    // Two cases in three make the EOS ids likely.
                    let boost = [0.0, 2.5, 5.0][(case / 3 % 3) as usize];
                    let mut model = FnModel::boosted(vocab, 3.0, case, eos, boost);
                    let o = options(beams, lp, early, r, max, eos);
                    let got = run(&mut model, stages, &prompt, &o);
                    let Some(want) = transformers_reference(&model, stages, &prompt, &o) else {
                        skipped += 1;
                        continue;
                    };
                    compared += 1;
                    let got: Vec<(Vec<u32>, f32)> =
                        got.into_iter().map(|(t, s, _)| (t, s as f32)).collect();
                    assert_eq!(got, want, "case {case}: {o:?} {stages:?}");
                    // Every step fed at most N beams one token each.
                    assert!(model.steps[1..]
                        .iter()
                        .all(|s| s.len() <= beams && s.iter().all(|&n| n == 1)));
                }
            }
        }
    }
    assert!(
        compared >= 200 && skipped * 10 <= compared,
        "{compared} compared, {skipped} skipped"
    );
}

#[test]
fn with_enough_beams_the_best_sequences_of_an_exhaustive_search_are_found() {
    // Vocabulary 3 (EOS 2), at most 3 tokens: 1 + 2 + 4 + 8 = 15 possible hypotheses. With
    // N = 27 beams nothing is ever pruned, so the search returns all of them, ranked.
    let vocab = 3;
    let max = 3;
    for salt in 0..6u64 {
        for stages in [Stages::None, Stages::Penalty, Stages::NoRepeat] {
            for lp in [1.0, 0.0, 2.0, -0.5] {
                for early in [
                    EarlyStopping::True,
                    EarlyStopping::False,
                    EarlyStopping::Never,
                ] {
                    let mut model = FnModel::hash(vocab, 4.0, salt);
                    let prompt = [1, 0];
                    let o = options(27, lp, early, 27, max, &[2]);
                    let got = run(&mut model, stages, &prompt, &o);
                    // Every sequence that ends in EOS or reaches the limit, scored alike.
                    let mut all: Vec<(Vec<u32>, f32)> = Vec::new();
                    let mut frontier: Vec<(Vec<u32>, f32)> = vec![(Vec::new(), 0.0)];
                    for len in 1..=max {
                        let mut next = Vec::new();
                        for (seq, score) in frontier {
                            let history: Vec<u32> = prompt.iter().chain(&seq).copied().collect();
                            let row = processed(&model, stages, &history, prompt.len());
                            for (t, &x) in row.iter().enumerate() {
                                if x == f32::NEG_INFINITY {
                                    continue;
                                }
                                let mut s = seq.clone();
                                s.push(t as u32);
                                let total = score + x;
                                if t == 2 || len == max {
                                    all.push((s, total / (len as f64).powf(lp) as f32));
                                } else {
                                    next.push((s, total));
                                }
                            }
                        }
                        frontier = next;
                    }
                    all.sort_by(|a, b| b.1.total_cmp(&a.1));
                    let got: Vec<(Vec<u32>, f32)> =
                        got.into_iter().map(|(t, s, _)| (t, s as f32)).collect();
                    assert_eq!(got, all, "salt {salt}, {stages:?}, α {lp}, {early}");
                }
            }
        }
    }
}

#[test]
fn eos_ends_hypotheses_and_is_kept() {
    for salt in 0..20 {
        let mut model = FnModel::hash(12, 3.0, salt);
        let o = options(4, 1.0, EarlyStopping::False, 4, 6, &[3, 7]);
        let got = run(&mut model, Stages::None, &[1, 2], &o);
        assert_eq!(got.len(), 4);
        for (tokens, _, finish) in &got {
            let (last, body) = tokens.split_last().unwrap();
            assert!(body.iter().all(|t| ![3, 7].contains(t)), "{tokens:?}");
            match finish {
                FinishReason::Eos => assert!([3, 7].contains(last)),
                FinishReason::Length => assert_eq!(tokens.len(), 6),
                other => panic!("{other}"),
            }
        }
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    }
}

#[test]
fn the_length_penalty_favours_long_or_short_hypotheses() {
    // Over many prompts, the best hypotheses are longer on the whole with α = 2 than with
    // α = −0.5 (EOS likely enough that both finish early and late).
    let (mut long, mut short) = (0, 0);
    for salt in 0..40 {
        let mut lens = [0usize; 2];
        for (i, lp) in [2.0, -0.5].into_iter().enumerate() {
            let mut model = FnModel::hash(10, 2.0, salt);
            let o = options(4, lp, EarlyStopping::Never, 1, 8, &[4]);
            lens[i] = run(&mut model, Stages::None, &[salt as u32 % 10], &o)[0]
                .0
                .len();
        }
        long += lens[0];
        short += lens[1];
    }
    assert!(long > short + 40, "α = 2: {long} tokens, α = −0.5: {short}");
}

#[test]
fn each_beam_sees_its_own_history() {
    // A stage that bans what it accepted: no hypothesis repeats a token or uses a prompt
    // token, however beams were forked and reordered.
    for salt in 0..10 {
        let mut model = FnModel::hash(40, 3.0, salt);
        let prompt = [1, 2, 3];
        let o = options(4, 1.0, EarlyStopping::Never, 4, 10, &[]);
        let got = run(&mut model, Stages::Ban, &prompt, &o);
        assert_eq!(got.len(), 4);
        for (tokens, _, _) in &got {
            let mut seen: Vec<u32> = prompt.to_vec();
            for &t in tokens {
                assert!(!seen.contains(&t), "{tokens:?}");
                seen.push(t);
            }
        }
        assert!(model.forks > 0);
    }
}

#[test]
fn truncating_stages_leave_their_removed_tokens_out() {
    // top_k(2) keeps two tokens per beam: every token chosen is among the two best of its
    // beam, and the search still fills its beams (fewer than K continuations).
    let mut model = FnModel::hash(30, 3.0, 1);
    let pipes = (0..3)
        .map(|_| {
            Pipeline::new(vec![
                ("top_k".into(), Box::new(TopK::new(2)) as Box<dyn Sampler>),
                ("greedy".into(), Box::new(Greedy::new())),
            ])
        })
        .collect();
    let prompt = [4, 5];
    let o = options(3, 1.0, EarlyStopping::False, 3, 5, &[]);
    let out = beam_search(&mut model, pipes, &prompt, &o).unwrap();
    assert_eq!(out.hypotheses.len(), 3);
    for h in &out.hypotheses {
        let mut history = prompt.to_vec();
        for &t in &h.tokens {
            let row = (model.logits)(&history);
            let better = row.iter().filter(|&&x| x > row[t as usize]).count();
            assert!(better < 2, "{:?}", h.tokens);
            history.push(t);
        }
    }
}

#[test]
fn options_are_checked_before_anything_runs() {
    let cases = [
        (
            options(0, 1.0, EarlyStopping::False, 1, 5, &[]),
            0,
            BeamOptionsError::NoBeams,
        ),
        (
            options(2, 1.0, EarlyStopping::False, 3, 5, &[]),
            2,
            BeamOptionsError::NumReturn {
                num_return: 3,
                beams: 2,
            },
        ),
        (
            options(2, 1.0, EarlyStopping::False, 0, 5, &[]),
            2,
            BeamOptionsError::NumReturn {
                num_return: 0,
                beams: 2,
            },
        ),
        (
            options(2, 1.0, EarlyStopping::False, 1, 0, &[]),
            2,
            BeamOptionsError::NoTokens,
        ),
        (
            options(2, 1.0, EarlyStopping::False, 1, 5, &[]),
            3,
            BeamOptionsError::Pipelines {
                pipelines: 3,
                beams: 2,
            },
        ),
    ];
    for (o, n, want) in cases {
        let mut model = FnModel::hash(8, 1.0, 0);
        let err = beam_search(&mut model, pipelines(Stages::None, n), &[1], &o).unwrap_err();
        match err {
            Error::BeamOptions(e) => assert_eq!(e, want),
            other => panic!("{other}"),
        }
        assert!(model.steps.is_empty() && model.seqs.is_empty());
    }
    let msg = Error::BeamOptions(BeamOptionsError::NumReturn {
        num_return: 3,
        beams: 2,
    })
    .to_string();
    assert_eq!(
        msg,
        "beam search: cannot return 3 sequences from 2 beams (1 to 2)"
    );
}

#[test]
fn a_random_selector_is_refused_with_the_reason() {
    let mut model = FnModel::hash(8, 1.0, 0);
    let pipes = (0..2)
        .map(|i| {
            Pipeline::new(vec![
                (
                    "penalty".into(),
                    Box::new(Penalty::new(1.2, 0.0, 0.0, 64)) as Box<dyn Sampler>,
                ),
                ("dist".into(), Box::new(Dist::new(i))),
            ])
        })
        .collect();
    let o = options(2, 1.0, EarlyStopping::False, 1, 5, &[]);
    let err = beam_search(&mut model, pipes, &[1], &o).unwrap_err();
    assert!(matches!(&err, Error::BeamSelector { selector } if selector == "dist"));
    let msg = err.to_string();
    assert!(
        msg.contains("must end in `greedy`") && msg.contains("`dist`"),
        "{msg}"
    );
    assert!(model.steps.is_empty());
    // No selector at all is fine: nothing to transform but the log-softmax.
    let pipes = (0..2).map(|_| Pipeline::new(Vec::new())).collect();
    let out = beam_search(&mut model, pipes, &[1], &o).unwrap();
    assert_eq!(out.hypotheses[0].tokens.len(), 5);
}

#[test]
fn a_failing_model_leaves_no_sequence_open() {
    let mut model = FnModel::hash(8, 1.0, 0);
    model.fail_at = Some(3);
    let o = options(3, 1.0, EarlyStopping::Never, 1, 10, &[]);
    let err = beam_search(&mut model, pipelines(Stages::None, 3), &[1, 2], &o).unwrap_err();
    assert!(matches!(err, Error::Model(_)), "{err}");
    assert!(model.seqs.is_empty());
    assert!(model.forks >= 2);
}

#[test]
fn a_cancelled_search_returns_the_best_so_far() {
    let flag = AtomicBool::new(true);
    let mut model = FnModel::hash(8, 1.0, 0);
    let mut o = options(3, 1.0, EarlyStopping::Never, 3, 10, &[]);
    o.cancel = Some(&flag);
    let out = beam_search(&mut model, pipelines(Stages::None, 3), &[1, 2], &o).unwrap();
    assert_eq!(out.hypotheses.len(), 3);
    assert!(out
        .hypotheses
        .iter()
        .all(|h| h.finish == FinishReason::Cancelled && h.tokens.len() == 1));
    assert_eq!(model.steps.len(), 1, "the prefill only");
    assert!(model.seqs.is_empty());
}

#[test]
fn one_beam_with_early_stopping_is_greedy_search() {
    for salt in 0..20 {
        let mut model = FnModel::hash(10, 2.0, salt);
        let o = options(1, 1.0, EarlyStopping::False, 1, 8, &[4]);
        let got = run(&mut model, Stages::None, &[3], &o);
        let mut history = vec![3u32];
        let mut greedy = Vec::new();
        for _ in 0..8 {
            let row = (model.logits)(&history);
            let t = (0..10)
                .max_by(|&a, &b| row[a].total_cmp(&row[b]).then(b.cmp(&a)))
                .unwrap() as u32;
            greedy.push(t);
            history.push(t);
            if t == 4 {
                break;
            }
        }
        assert_eq!(got[0].0, greedy);
    }
}

#[test]
fn early_stopping_parses_as_transformers_spells_it() {
    for (s, e) in [
        ("true", EarlyStopping::True),
        ("False", EarlyStopping::False),
        ("never", EarlyStopping::Never),
    ] {
        assert_eq!(s.parse::<EarlyStopping>().unwrap(), e);
        assert_eq!(e.to_string(), s.to_ascii_lowercase());
    }
    let err = "sometimes".parse::<EarlyStopping>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "early stopping is `true`, `false` or `never`, not `sometimes`"
    );
}
