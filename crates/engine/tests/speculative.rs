//! Speculative decoding on weightless models: greedy identity with plain decoding (model
//! drafts and prompt lookup), the output distribution against plain sampling (chi-square),
//! the counters, the ends of a generation in the middle of an accepted run, stage state, and
//! the selectors it refuses.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use common::{greedy, HashModel};
use sieve_core::{Candidates, Context, Pipeline, Sampler};
use sieve_engine::chi_square::homogeneity;
use sieve_engine::{
    generate, generate_speculative, BatchModel, Detokenize, Drafter, Error, Feed, FinishReason,
    GenerateOptions, Generation, Result, SeqId, Sequence, SpeculativeOptions, SpeculativeStats,
};
use sieve_samplers::{dist::Dist, mirostat::Mirostat, temp::Temp, top_k::TopK};

/// Token `i` is the letter `'a' + i` (then `'A' + i − 26`).
struct Letters;

impl Detokenize for Letters {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(ids
            .iter()
            .map(|&i| match i {
                0..26 => char::from(b'a' + i as u8),
                _ => char::from(b'A' + (i - 26) as u8),
            })
            .collect())
    }
}

/// A stage whose state is the tokens it accepted: it fails if they differ from the history
/// the step shows (so a stage that sees a rejected draft, or misses a token, fails the
/// generation), and lowers the logit of the last one by 1.5 (so its state shapes the
/// distribution).
#[derive(Default)]
struct Witness {
    seen: Vec<u32>,
}

impl Sampler for Witness {
    fn apply(
        &mut self,
        c: &mut Candidates,
        cx: &Context<'_>,
    ) -> std::result::Result<(), sieve_core::Error> {
        if self.seen != cx.history {
            return Err(sieve_core::Error::Stage {
                stage: "witness".into(),
                message: format!("accepted {:?}, history {:?}", self.seen, cx.history),
            });
        }
        if let Some(i) = self.seen.last().and_then(|&t| c.position(t)) {
            let l = c.logit(i);
            c.set_logit(i, l - 1.5);
        }
        Ok(())
    }
    fn accept(&mut self, token: u32) {
        self.seen.push(token);
    }
    fn reset(&mut self) {
        self.seen.clear();
    }
}

fn witness() -> (String, Box<dyn Sampler>) {
    ("witness".to_string(), Box::<Witness>::default())
}

/// `witness | greedy`.
fn greedy_pipeline() -> Pipeline {
    Pipeline::new(vec![witness(), greedy()])
}

/// `witness | temp(0.9) | top_k(k) | dist(seed)` (`k = 0`: no truncation).
fn sampling_pipeline(k: usize, seed: u64) -> Pipeline {
    Pipeline::new(vec![
        witness(),
        ("temp".into(), Box::new(Temp::new(0.9))),
        ("top_k".into(), Box::new(TopK::new(k))),
        ("dist".into(), Box::new(Dist::new(seed))),
    ])
}

/// A draft model: the target's logits plus `noise` times another model's, so that it agrees
/// with the target often but not always. Both inner models see the same operations, so
/// their handles coincide.
struct Mix {
    target: HashModel,
    other: HashModel,
    noise: f32,
}

impl Mix {
    fn new(target: &HashModel, noise: f32) -> Self {
        Mix {
            target: HashModel::new(target.vocab, target.sharpness, target.salt),
            other: HashModel::new(target.vocab, target.sharpness, target.salt ^ 0x5eed),
            noise,
        }
    }
}

impl BatchModel for Mix {
    fn vocab_size(&self) -> usize {
        self.target.vocab
    }
    fn context_len(&self) -> usize {
        self.target.context
    }
    fn open(&mut self) -> SeqId {
        self.other.open();
        self.target.open()
    }
    fn fork(&mut self, seq: SeqId) -> Result<SeqId> {
        self.other.fork(seq)?;
        self.target.fork(seq)
    }
    fn close(&mut self, seq: SeqId) {
        self.other.close(seq);
        self.target.close(seq);
    }
    fn position(&self, seq: SeqId) -> Result<usize> {
        self.target.position(seq)
    }
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.other.truncate(seq, len)?;
        self.target.truncate(seq, len)
    }
    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>> {
        let mut out = self.target.step(feeds)?;
        let other = self.other.step(feeds)?;
        for (rows, noise) in out.iter_mut().zip(other) {
            for (x, n) in rows.iter_mut().zip(noise) {
                *x += self.noise * n;
            }
        }
        Ok(out)
    }
}

/// A model whose logits depend on the last `order` tokens only (a Markov chain), so that its
/// outputs repeat and prompt lookup finds drafts.
struct Markov {
    inner: HashModel,
    order: usize,
}

impl BatchModel for Markov {
    fn vocab_size(&self) -> usize {
        self.inner.vocab
    }
    fn context_len(&self) -> usize {
        self.inner.context
    }
    fn open(&mut self) -> SeqId {
        self.inner.open()
    }
    fn fork(&mut self, seq: SeqId) -> Result<SeqId> {
        self.inner.fork(seq)
    }
    fn close(&mut self, seq: SeqId) {
        self.inner.close(seq)
    }
    fn position(&self, seq: SeqId) -> Result<usize> {
        self.inner.position(seq)
    }
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()> {
        self.inner.truncate(seq, len)
    }
    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>> {
        let before: Vec<usize> = feeds
            .iter()
            .map(|f| self.inner.position(f.seq))
            .collect::<Result<_>>()?;
        self.inner.step(feeds)?;
        Ok(feeds
            .iter()
            .zip(before)
            .map(|(f, held)| {
                let tokens = self.inner.tokens(f.seq);
                let ends: Vec<usize> = match f.logits {
                    sieve_engine::LogitsAt::Last => vec![tokens.len()],
                    sieve_engine::LogitsAt::All => (held + 1..=tokens.len()).collect(),
                };
                ends.into_iter()
                    .flat_map(|end| {
                        let from = end.saturating_sub(self.order);
                        self.inner.logits_after(&tokens[from..end])
                    })
                    .collect()
            })
            .collect())
    }
}

fn options(max_tokens: usize) -> GenerateOptions<'static> {
    GenerateOptions {
        max_tokens,
        ..GenerateOptions::default()
    }
}

/// Plain decoding of `prompt` on a fresh sequence of `model`.
fn plain(
    model: &mut dyn BatchModel,
    pipeline: &mut Pipeline,
    prompt: &[u32],
    opts: &GenerateOptions<'_>,
) -> Generation {
    let seq = model.open();
    let mut view = Sequence::new(model, seq).unwrap();
    let g = generate(&mut view, &Letters, pipeline, prompt, opts, &mut |_| {}).unwrap();
    model.close(seq);
    g
}

/// Speculative decoding with a draft model, returning the streamed text too.
fn with_draft(
    target: &mut dyn BatchModel,
    draft: &mut dyn BatchModel,
    pipelines: (&mut Pipeline, &mut Pipeline),
    prompt: &[u32],
    opts: &GenerateOptions<'_>,
    spec: SpeculativeOptions,
) -> (Generation, SpeculativeStats, String) {
    let mut streamed = String::new();
    let (g, s) = generate_speculative(
        target,
        Drafter::Model {
            model: draft,
            pipeline: pipelines.1,
        },
        &Letters,
        pipelines.0,
        prompt,
        opts,
        &spec,
        &mut |t| streamed.push_str(t),
    )
    .unwrap();
    (g, s, streamed)
}

fn with_lookup(
    target: &mut dyn BatchModel,
    pipeline: &mut Pipeline,
    max_ngram: usize,
    prompt: &[u32],
    opts: &GenerateOptions<'_>,
    spec: SpeculativeOptions,
) -> (Generation, SpeculativeStats) {
    generate_speculative(
        target,
        Drafter::Lookup { max_ngram },
        &Letters,
        pipeline,
        prompt,
        opts,
        &spec,
        &mut |_| {},
    )
    .unwrap()
}

fn spec(draft_tokens: usize, seed: u64) -> SpeculativeOptions {
    SpeculativeOptions { draft_tokens, seed }
}

const PROMPTS: [&[u32]; 4] = [
    &[3],
    &[1, 2, 3, 4, 5],
    &[7, 7, 7, 7],
    &[0, 9, 4, 11, 2, 8, 8, 1],
];

#[test]
fn greedy_with_a_draft_model_is_plain_greedy_token_for_token() {
    let mut target = HashModel::new(16, 3.0, 0);
    let (mut drafted, mut accepted) = (0, 0);
    for noise in [0.5, 2.0] {
        let mut draft = Mix::new(&target, noise);
        for prompt in PROMPTS {
            let want = plain(&mut target, &mut greedy_pipeline(), prompt, &options(40));
            for k in [1, 2, 3, 5, 8] {
                let (got, stats, streamed) = with_draft(
                    &mut target,
                    &mut draft,
                    (&mut greedy_pipeline(), &mut greedy_pipeline()),
                    prompt,
                    &options(40),
                    spec(k, 1),
                );
                assert_eq!(
                    got.tokens, want.tokens,
                    "noise {noise}, K = {k}, {prompt:?}"
                );
                assert_eq!((&got.text, got.finish), (&want.text, want.finish));
                assert_eq!(streamed, got.text);
                drafted += stats.drafted;
                accepted += stats.accepted;
            }
        }
    }
    // Both paths were taken: drafts accepted and drafts rejected.
    assert!(
        0 < accepted && accepted < drafted,
        "{accepted} of {drafted}"
    );
}

#[test]
fn a_draft_equal_to_the_target_is_always_accepted() {
    let mut target = HashModel::new(16, 3.0, 0);
    let mut draft = HashModel::new(16, 3.0, 0);
    let prompt = [1, 2, 3];
    let want = plain(&mut target, &mut greedy_pipeline(), &prompt, &options(21));
    let (got, s, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &options(21),
        spec(4, 0),
    );
    assert_eq!(got.tokens, want.tokens);
    // Token 1 from the prefill, then 4 rounds of 4 drafts + 1: 5 target passes for 21 tokens.
    // The draft takes 4 passes a round (the history's new tokens, then 3 drafts).
    assert_eq!(
        (
            s.drafted,
            s.accepted,
            s.target_forwards,
            s.draft_forwards,
            s.generated
        ),
        (16, 16, 5, 16, 21)
    );
    assert_eq!(s.acceptance_rate(), 1.0);
    assert!((s.target_forwards_per_token() - 5.0 / 21.0).abs() < 1e-12);
    // The target's and the draft's sequences are closed at the end.
    assert_eq!(target.steps, 21 + 5);
    assert!(target.position(SeqId(2)).is_err() && draft.position(SeqId(1)).is_err());

    // Sampling with equal models accepts everything too (p(x)/q(x) is exactly 1).
    let (_, s, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut sampling_pipeline(0, 0), &mut sampling_pipeline(0, 0)),
        &prompt,
        &options(21),
        spec(4, 3),
    );
    assert_eq!((s.drafted, s.accepted, s.target_forwards), (16, 16, 5));
}

#[test]
fn the_budget_leaves_room_for_the_extra_token_and_is_never_exceeded() {
    let mut target = HashModel::new(16, 3.0, 0);
    let mut draft = HashModel::new(16, 3.0, 0);
    let prompt = [5, 6];
    let want = plain(&mut target, &mut greedy_pipeline(), &prompt, &options(64));
    for max in 1..=23 {
        let (got, s, _) = with_draft(
            &mut target,
            &mut draft,
            (&mut greedy_pipeline(), &mut greedy_pipeline()),
            &prompt,
            &options(max),
            spec(4, 0),
        );
        assert_eq!(got.tokens, want.tokens[..max], "max_tokens {max}");
        assert_eq!(got.finish, FinishReason::Length);
        // Every draft fits the budget, so all are accepted: 1 + ⌈(max − 1)/5⌉ target passes.
        assert_eq!(s.accepted, s.drafted);
        assert_eq!(
            s.target_forwards,
            1 + (max - 1).div_ceil(5),
            "max_tokens {max}"
        );
    }
    let (g, s, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &options(0),
        spec(4, 0),
    );
    assert!(g.tokens.is_empty() && s == SpeculativeStats::default());
}

#[test]
fn eos_and_stop_strings_in_the_middle_of_an_accepted_run() {
    let mut target = HashModel::new(20, 3.0, 0);
    let mut draft = HashModel::new(20, 3.0, 0);
    let prompt = [2, 4, 6];
    let free = plain(&mut target, &mut greedy_pipeline(), &prompt, &options(30));
    // An EOS id first chosen at position j ≥ 2 (inside the first round of 8 drafts).
    let j = (2..free.tokens.len())
        .find(|&j| !free.tokens[..j].contains(&free.tokens[j]))
        .unwrap();
    let opts = GenerateOptions {
        max_tokens: 30,
        eos: vec![free.tokens[j]],
        ..GenerateOptions::default()
    };
    let want = plain(&mut target, &mut greedy_pipeline(), &prompt, &opts);
    let (got, s, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &opts,
        spec(8, 0),
    );
    assert_eq!(want.finish, FinishReason::Eos);
    assert_eq!(
        (&got.tokens, &got.text, got.finish),
        (&want.tokens, &want.text, want.finish)
    );
    assert_eq!(got.tokens.len(), j + 1);
    // The draft stopped at its EOS: it drafted j tokens after the first.
    assert_eq!((s.drafted, s.accepted), (j, j));

    // A stop string made of tokens 3 and 4.
    let stop = Letters.decode(&free.tokens[3..5]).unwrap();
    let opts = GenerateOptions {
        max_tokens: 30,
        stop: vec![stop.clone()],
        ..GenerateOptions::default()
    };
    let want = plain(&mut target, &mut greedy_pipeline(), &prompt, &opts);
    let (got, _, streamed) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &opts,
        spec(8, 0),
    );
    assert_eq!(want.finish, FinishReason::Stop);
    assert_eq!(
        (&got.tokens, &got.text, got.finish),
        (&want.tokens, &want.text, want.finish)
    );
    assert_eq!(streamed, want.text);
    assert!(!got.text.contains(&stop));

    // Cancelled before the first token, as plain decoding.
    let flag = AtomicBool::new(true);
    let opts = GenerateOptions {
        cancel: Some(&flag),
        ..options(30)
    };
    let (got, _, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &opts,
        spec(8, 0),
    );
    assert_eq!((got.tokens.len(), got.finish), (0, FinishReason::Cancelled));
}

#[test]
fn the_context_ends_generation_as_in_plain_decoding() {
    let mut target = HashModel::new(16, 3.0, 0);
    target.context = 12;
    let mut draft = Mix::new(&target, 1.0);
    draft.target.context = 9;
    draft.other.context = 9;
    let prompt = [1, 2, 3];
    let want = plain(&mut target, &mut greedy_pipeline(), &prompt, &options(100));
    let (got, _, _) = with_draft(
        &mut target,
        &mut draft,
        (&mut greedy_pipeline(), &mut greedy_pipeline()),
        &prompt,
        &options(100),
        spec(5, 0),
    );
    assert_eq!((got.tokens.len(), got.finish), (9, FinishReason::Length));
    assert_eq!(got.tokens, want.tokens);
}

#[test]
fn greedy_with_prompt_lookup_is_plain_greedy_token_for_token() {
    let mut target = Markov {
        inner: HashModel::new(12, 3.0, 0),
        order: 2,
    };
    let (mut drafted, mut accepted) = (0, 0);
    for prompt in PROMPTS {
        let want = plain(&mut target, &mut greedy_pipeline(), prompt, &options(48));
        for (k, n) in [(1, 1), (3, 2), (10, 2), (10, 3)] {
            let (got, s) = with_lookup(
                &mut target,
                &mut greedy_pipeline(),
                n,
                prompt,
                &options(48),
                spec(k, 0),
            );
            assert_eq!(got.tokens, want.tokens, "K = {k}, n = {n}, {prompt:?}");
            assert_eq!((&got.text, got.finish), (&want.text, want.finish));
            assert_eq!(s.draft_forwards, 0);
            assert!(s.target_forwards < 48);
            drafted += s.drafted;
            accepted += s.accepted;
        }
    }
    assert!(
        0 < accepted && accepted < drafted,
        "{accepted} of {drafted}"
    );
}

#[test]
fn selectors_without_a_distribution_are_refused() {
    let mirostat = || {
        Pipeline::new(vec![(
            "mirostat".to_string(),
            Box::new(Mirostat::new(5.0, 0.1, 100, 0)) as Box<dyn Sampler>,
        )])
    };
    let mut target = HashModel::new(8, 1.0, 0);
    let mut draft = HashModel::new(8, 1.0, 1);
    let run =
        |target: &mut HashModel, draft: &mut HashModel, t: &mut Pipeline, d: &mut Pipeline| {
            generate_speculative(
                target,
                Drafter::Model {
                    model: draft,
                    pipeline: d,
                },
                &Letters,
                t,
                &[1],
                &options(4),
                &spec(2, 0),
                &mut |_| {},
            )
        };
    for (t, d) in [
        (mirostat(), greedy_pipeline()),
        (greedy_pipeline(), mirostat()),
        (Pipeline::new(vec![]), greedy_pipeline()),
    ] {
        let (mut t, mut d) = (t, d);
        let e = run(&mut target, &mut draft, &mut t, &mut d).unwrap_err();
        assert!(matches!(e, Error::SpeculativeSelector { .. }), "{e}");
    }
    let e = run(
        &mut target,
        &mut draft,
        &mut mirostat(),
        &mut greedy_pipeline(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "speculative decoding needs the distribution the selector draws from, and `mirostat` \
         exposes none: end the pipeline with `dist` or `greedy`"
    );
    // Nothing was opened on either model.
    assert_eq!((target.steps, draft.steps), (0, 0));
}

/// The first three tokens of `runs` generations, counted.
fn first_three(runs: impl Iterator<Item = Vec<u32>>) -> BTreeMap<Vec<u32>, u64> {
    let mut counts = BTreeMap::new();
    for tokens in runs {
        *counts.entry(tokens[..3].to_vec()).or_insert(0) += 1;
    }
    counts
}

/// The chi-square test's threshold: a p-value below it fails (seeds are fixed, so each test
/// is deterministic; with a correct implementation one in a thousand seed choices would).
const ALPHA: f64 = 0.001;
const SEEDS: u64 = 3000;

#[test]
fn sampling_with_a_draft_model_has_the_target_distribution() {
    // Vocabulary 5, logits in ±2 then temp 0.9: 125 outcomes for three tokens, far from
    // uniform. The draft agrees only loosely (noise 1.5).
    let prompt = [1, 2];
    let mut target = HashModel::new(5, 2.0, 3);
    let mut draft = Mix::new(&target, 1.5);
    for top_k in [0, 3] {
        let want = first_three((0..SEEDS).map(|seed| {
            plain(
                &mut target,
                &mut sampling_pipeline(top_k, seed),
                &prompt,
                &options(3),
            )
            .tokens
        }));
        let mut totals = SpeculativeStats::default();
        let got = first_three((0..SEEDS).map(|seed| {
            let (g, s, _) = with_draft(
                &mut target,
                &mut draft,
                (
                    &mut sampling_pipeline(top_k, 0),
                    &mut sampling_pipeline(top_k, 0),
                ),
                &prompt,
                &options(3),
                spec(2, 1_000_000 + seed),
            );
            totals.drafted += s.drafted;
            totals.accepted += s.accepted;
            g.tokens
        }));
        let h = homogeneity(&want, &got, 5.0);
        eprintln!(
            "draft model, top_k {top_k}: χ² = {:.1}, df = {}, p = {:.3}; acceptance {:.2}",
            h.statistic,
            h.df,
            h.p_value,
            totals.accepted as f64 / totals.drafted as f64
        );
        assert!(h.df >= 10, "{h:?}");
        assert!(h.p_value >= ALPHA, "{h:?}");
        assert!(totals.accepted > 0 && totals.accepted < totals.drafted);
    }
}

#[test]
fn sampling_with_prompt_lookup_has_the_target_distribution() {
    let prompt = [1, 2, 3, 1, 2, 0, 1];
    let mut target = Markov {
        inner: HashModel::new(4, 2.0, 5),
        order: 1,
    };
    let want = first_three((0..SEEDS).map(|seed| {
        plain(
            &mut target,
            &mut sampling_pipeline(0, seed),
            &prompt,
            &options(3),
        )
        .tokens
    }));
    let mut accepted = 0;
    let got = first_three((0..SEEDS).map(|seed| {
        let (g, s) = with_lookup(
            &mut target,
            &mut sampling_pipeline(0, 0),
            2,
            &prompt,
            &options(3),
            spec(3, 1_000_000 + seed),
        );
        accepted += s.accepted;
        g.tokens
    }));
    let h = homogeneity(&want, &got, 5.0);
    eprintln!(
        "prompt lookup: χ² = {:.1}, df = {}, p = {:.3}; {accepted} accepted",
        h.statistic, h.df, h.p_value
    );
    assert!(h.df >= 10, "{h:?}");
    assert!(h.p_value >= ALPHA, "{h:?}");
    assert!(accepted > 0);
}

#[test]
fn the_chi_square_test_sees_the_draft_distribution() {
    // The test has power: the samples of a model whose logits differ from the target's by
    // at most ±0.3 (noise 0.15 × ±2) are told apart from the target's.
    let prompt = [1, 2];
    let mut target = HashModel::new(5, 2.0, 3);
    let mut draft = Mix::new(&target, 0.15);
    let want = first_three((0..SEEDS).map(|seed| {
        plain(
            &mut target,
            &mut sampling_pipeline(0, seed),
            &prompt,
            &options(3),
        )
        .tokens
    }));
    let other = first_three((0..SEEDS).map(|seed| {
        plain(
            &mut draft,
            &mut sampling_pipeline(0, 1_000_000 + seed),
            &prompt,
            &options(3),
        )
        .tokens
    }));
    let h = homogeneity(&want, &other, 5.0);
    eprintln!(
        "target vs draft: χ² = {:.1}, df = {}, p = {:.2e}",
        h.statistic, h.df, h.p_value
    );
    assert!(h.p_value < ALPHA, "{h:?}");
}
