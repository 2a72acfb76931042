//! Speculative decoding with real models: the embedded story model (`models/embedded/target`)
//! and its draft (`models/embedded/draft`, same tokenizer, half the width and layers). Greedy
//! speculative decoding, with the draft or with prompt lookup, gives plain greedy decoding's
//! tokens; sampling gives plain sampling's distribution of the first three tokens:
//! - in every build, speculative samples against the exact distribution of plain sampling,
//!   enumerated over every prefix the pipeline can produce (chi-square goodness of fit);
//! - with `--ignored` (meant for `--release`, where it takes ~15 s; a debug build needs over 10 minutes), 2000 seeds of
//!   plain sampling against 2000 of speculative sampling (chi-square homogeneity).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use sieve_backends::{BackendKind, LoadedModel, ModelDir, Tokenizer};
use sieve_core::{Candidates, Context, Pipeline, Sampler};
use sieve_engine::chi_square::{goodness_of_fit, homogeneity, ChiSquare};
use sieve_engine::speculative::Distribution;
use sieve_engine::{
    generate, generate_speculative, BatchModel, Drafter, Error, Feed, GenerateOptions, Generation,
    LogitsAt, SeqId, SpeculativeOptions, SpeculativeStats,
};
use sieve_samplers::{dist::Dist, greedy::Greedy, temp::Temp, top_k::TopK};

/// `models/embedded/<name>` at the workspace root.
fn embedded(name: &str) -> ModelDir {
    ModelDir::open(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../models/embedded")
            .join(name),
    )
    .unwrap()
}

struct Models {
    target: LoadedModel,
    draft: LoadedModel,
    tokenizer: Tokenizer,
    eos: Vec<u32>,
}

fn models() -> Models {
    let (target, draft) = (embedded("target"), embedded("draft"));
    let tokenizer = target.tokenizer().unwrap();
    // One tokenizer: the draft's file is the target's.
    assert_eq!(
        std::fs::read(target.path().join("tokenizer.json")).unwrap(),
        std::fs::read(draft.path().join("tokenizer.json")).unwrap()
    );
    Models {
        eos: target.eos_ids(),
        target: target.load(BackendKind::Flex).unwrap(),
        draft: draft.load(BackendKind::Flex).unwrap(),
        tokenizer,
    }
}

fn stage(name: &str, s: impl Sampler + 'static) -> (String, Box<dyn Sampler>) {
    (name.to_string(), Box::new(s))
}

fn greedy() -> Pipeline {
    Pipeline::new(vec![stage("greedy", Greedy::new())])
}

/// `temp(t) | top_k(k) | dist(seed)`.
fn sampling(t: f64, k: usize, seed: u64) -> Pipeline {
    Pipeline::new(vec![
        stage("temp", Temp::new(t)),
        stage("top_k", TopK::new(k)),
        stage("dist", Dist::new(seed)),
    ])
}

fn options(max_tokens: usize, eos: &[u32]) -> GenerateOptions<'static> {
    GenerateOptions {
        max_tokens,
        eos: eos.to_vec(),
        ..GenerateOptions::default()
    }
}

impl Models {
    fn encode(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, true).unwrap()
    }

    /// Plain decoding on the target, as `sieve generate` runs it.
    fn plain(&mut self, pipeline: &mut Pipeline, prompt: &[u32], max: usize) -> Generation {
        let opts = options(max, &self.eos);
        generate(
            &mut self.target,
            &self.tokenizer,
            pipeline,
            prompt,
            &opts,
            &mut |_| {},
        )
        .unwrap()
    }

    /// Speculative decoding with the draft model (`lookup: None`) or prompt lookup.
    fn speculative(
        &mut self,
        pipelines: (&mut Pipeline, &mut Pipeline),
        lookup: Option<usize>,
        prompt: &[u32],
        max: usize,
        spec: SpeculativeOptions,
    ) -> (Generation, SpeculativeStats) {
        speculative(
            &mut self.target,
            &mut self.draft,
            (&self.tokenizer, &self.eos),
            pipelines,
            lookup,
            prompt,
            max,
            spec,
        )
    }
}

/// Speculative decoding of `target` with `draft` (`lookup: None`) or prompt lookup.
#[allow(clippy::too_many_arguments)]
fn speculative(
    target: &mut dyn BatchModel,
    draft: &mut dyn BatchModel,
    (tokenizer, eos): (&Tokenizer, &[u32]),
    pipelines: (&mut Pipeline, &mut Pipeline),
    lookup: Option<usize>,
    prompt: &[u32],
    max: usize,
    spec: SpeculativeOptions,
) -> (Generation, SpeculativeStats) {
    let opts = options(max, eos);
    let drafter = match lookup {
        Some(max_ngram) => Drafter::Lookup { max_ngram },
        None => Drafter::Model {
            model: draft,
            pipeline: pipelines.1,
        },
    };
    generate_speculative(
        target,
        drafter,
        tokenizer,
        pipelines.0,
        prompt,
        &opts,
        &spec,
        &mut |_| {},
    )
    .unwrap()
}

const PROMPTS: [&str; 3] = [
    "Once upon a time",
    "Tom had a red ball. He",
    "The little cat was sad because",
];

#[test]
fn greedy_speculative_decoding_is_plain_greedy_token_for_token() {
    let mut m = models();
    let (mut drafted, mut accepted, mut forwards, mut generated) = (0, 0, 0, 0);
    for text in PROMPTS {
        let prompt = m.encode(text);
        let want = m.plain(&mut greedy(), &prompt, 48);
        for (k, lookup) in [(2, None), (5, None), (4, Some(2))] {
            let (got, s) = m.speculative(
                (&mut greedy(), &mut greedy()),
                lookup,
                &prompt,
                48,
                SpeculativeOptions {
                    draft_tokens: k,
                    seed: 0,
                },
            );
            assert_eq!(
                got.tokens, want.tokens,
                "{text:?}, K = {k}, lookup {lookup:?}"
            );
            assert_eq!((&got.text, got.finish), (&want.text, want.finish));
            if lookup.is_none() {
                drafted += s.drafted;
                accepted += s.accepted;
                forwards += s.target_forwards;
                generated += s.generated;
            }
        }
    }
    eprintln!(
        "greedy draft: {accepted} of {drafted} drafts accepted, {forwards} target passes for \
         {generated} tokens"
    );
    // The draft is a useful one: most of its guesses are the target's.
    assert!(accepted * 2 > drafted, "{accepted} of {drafted}");
}

/// The first (up to) three generated tokens, counted per outcome.
type Counts = BTreeMap<Vec<u32>, u64>;

/// The sampling pipeline of the distribution tests: `temp(1.5)` spreads the peaked story
/// distribution, `top_k(8)` makes its support sparse and bounds the enumeration.
fn test_sampling(seed: u64) -> Pipeline {
    sampling(1.5, 8, seed)
}

/// The exact distribution of the first `depth` tokens plain sampling draws after `prompt`:
/// every prefix with probability above 1e-12 is extended, one batched step per depth (the
/// model's batch invariance makes each row the logits plain decoding sees). A prefix ending
/// in EOS is an outcome of its own.
fn exact_first_tokens(
    model: &mut LoadedModel,
    pipeline: impl Fn() -> Pipeline,
    prompt: &[u32],
    depth: usize,
    eos: &[u32],
) -> BTreeMap<Vec<u32>, f64> {
    let vocab = model.vocab_size();
    let base = model.open();
    let first = model.step(&[Feed::last(base, prompt)]).unwrap().remove(0);
    // (prefix, its probability, its sequence, the logits after it)
    let mut frontier = vec![(Vec::new(), 1.0, base, first)];
    let mut outcomes = BTreeMap::new();
    for d in 0..depth {
        let mut next = Vec::new();
        for (prefix, prob, seq, logits) in frontier {
            let mut history = prompt.to_vec();
            history.extend_from_slice(&prefix);
            let mut pipeline = pipeline();
            for &t in &history {
                pipeline.accept(t);
            }
            let mut c = Candidates::from_logits(&logits);
            let cx = Context {
                history: &history,
                prompt_len: prompt.len(),
                vocab: None,
                step: d,
            };
            pipeline.transform(&mut c, &cx).unwrap();
            let p = Distribution::of_candidates(&mut c, vocab);
            for t in 0..vocab as u32 {
                let q = prob * p.prob(t);
                if q <= 1e-12 {
                    continue;
                }
                let mut longer = prefix.clone();
                longer.push(t);
                if d + 1 == depth || eos.contains(&t) {
                    outcomes.insert(longer, q);
                } else {
                    next.push((longer, q, seq));
                }
            }
        }
        // One step feeds every surviving prefix its last token, each on a fork of its parent.
        let seqs: Vec<SeqId> = next.iter().map(|n| model.fork(n.2).unwrap()).collect();
        let feeds: Vec<Feed<'_>> = next
            .iter()
            .zip(&seqs)
            .map(|(n, &s)| Feed::last(s, &n.0[n.0.len() - 1..]))
            .collect();
        let rows = if feeds.is_empty() {
            Vec::new()
        } else {
            model.step(&feeds).unwrap()
        };
        frontier = next
            .into_iter()
            .zip(seqs)
            .zip(rows)
            .map(|(((prefix, q, _), s), row)| (prefix, q, s, row))
            .collect();
    }
    let total: f64 = outcomes.values().sum();
    assert!((total - 1.0).abs() < 1e-6, "{total}");
    outcomes
}

/// `inner` with one prompt prefilled once: a sequence whose first feed starts with the prompt
/// is forked from the prefilled one, so that hundreds of generations after one prompt do not
/// each run its prefill (a debug build takes ~40 ms per forward pass). One feed per step.
struct Prefilled<'m> {
    inner: &'m mut LoadedModel,
    prompt: Vec<u32>,
    base: SeqId,
    after: Vec<f32>,
    /// Handle → the inner sequence (`None`: opened, nothing fed yet).
    seqs: BTreeMap<u32, Option<SeqId>>,
    next: u32,
}

impl<'m> Prefilled<'m> {
    fn new(inner: &'m mut LoadedModel, prompt: &[u32]) -> Self {
        let base = inner.open();
        let after = inner.step(&[Feed::last(base, prompt)]).unwrap().remove(0);
        Prefilled {
            inner,
            prompt: prompt.to_vec(),
            base,
            after,
            seqs: BTreeMap::new(),
            next: 0,
        }
    }

    fn inner_of(&self, seq: SeqId) -> sieve_engine::Result<Option<SeqId>> {
        self.seqs
            .get(&seq.0)
            .copied()
            .ok_or(Error::UnknownSequence(seq))
    }
}

impl BatchModel for Prefilled<'_> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn context_len(&self) -> usize {
        self.inner.context_len()
    }
    fn open(&mut self) -> SeqId {
        self.next += 1;
        self.seqs.insert(self.next, None);
        SeqId(self.next)
    }
    fn fork(&mut self, _: SeqId) -> sieve_engine::Result<SeqId> {
        unimplemented!("speculative decoding does not fork")
    }
    fn close(&mut self, seq: SeqId) {
        if let Some(Some(s)) = self.seqs.remove(&seq.0) {
            self.inner.close(s);
        }
    }
    fn position(&self, seq: SeqId) -> sieve_engine::Result<usize> {
        match self.inner_of(seq)? {
            Some(s) => self.inner.position(s),
            None => Ok(0),
        }
    }
    fn truncate(&mut self, seq: SeqId, len: usize) -> sieve_engine::Result<()> {
        match self.inner_of(seq)? {
            Some(s) => self.inner.truncate(s, len),
            None => Ok(()),
        }
    }
    fn step(&mut self, feeds: &[Feed<'_>]) -> sieve_engine::Result<Vec<Vec<f32>>> {
        assert_eq!(feeds.len(), 1, "one feed per step");
        let feed = feeds[0];
        let (s, tokens) = match self.inner_of(feed.seq)? {
            Some(s) => (s, feed.tokens),
            None if feed.tokens.starts_with(&self.prompt) => {
                let s = self.inner.fork(self.base)?;
                self.seqs.insert(feed.seq.0, Some(s));
                let rest = &feed.tokens[self.prompt.len()..];
                if rest.is_empty() {
                    assert_eq!(feed.logits, LogitsAt::Last);
                    return Ok(vec![self.after.clone()]);
                }
                (s, rest)
            }
            None => {
                let s = self.inner.open();
                self.seqs.insert(feed.seq.0, Some(s));
                (s, feed.tokens)
            }
        };
        self.inner.step(&[Feed {
            seq: s,
            tokens,
            logits: feed.logits,
        }])
    }
}

/// Counts the first three tokens of `seeds` speculative generations after `prompt`
/// (`max_tokens = 4`, `K = 3`: the first token comes from the prefill, the next two from a
/// round of two drafts, or from the draw that replaces a rejected one).
fn speculative_counts(
    m: &mut Models,
    prompt: &[u32],
    seeds: std::ops::Range<u64>,
) -> (Counts, SpeculativeStats) {
    let mut target = Prefilled::new(&mut m.target, prompt);
    let mut draft = Prefilled::new(&mut m.draft, prompt);
    let mut counts = Counts::new();
    let mut totals = SpeculativeStats::default();
    for seed in seeds {
        let (g, s) = speculative(
            &mut target,
            &mut draft,
            (&m.tokenizer, &m.eos),
            (&mut test_sampling(0), &mut test_sampling(0)),
            None,
            prompt,
            4,
            SpeculativeOptions {
                draft_tokens: 3,
                seed,
            },
        );
        *counts
            .entry(g.tokens.iter().take(3).copied().collect())
            .or_insert(0) += 1;
        totals.drafted += s.drafted;
        totals.accepted += s.accepted;
        totals.target_forwards += s.target_forwards;
    }
    (counts, totals)
}

fn report(what: &str, h: &ChiSquare, outcomes: usize, s: &SpeculativeStats, t: Instant) {
    eprintln!(
        "{what}: χ² = {:.1}, df = {}, p = {:.3}; {outcomes} outcomes; acceptance {:.2}; {:.1} s",
        h.statistic,
        h.df,
        h.p_value,
        s.acceptance_rate(),
        t.elapsed().as_secs_f64()
    );
}

/// A prompt after which the first three tokens are far from certain (a name, then what
/// follows it), so that the distribution test has many outcomes to compare.
const SPREAD: &str = "She said";

/// A p-value below this fails (the seeds are fixed, so the test is deterministic).
const ALPHA: f64 = 0.001;

#[test]
fn sampling_with_the_draft_model_has_the_exact_target_distribution() {
    let t = Instant::now();
    let mut m = models();
    let prompt = m.encode(SPREAD);
    let exact = exact_first_tokens(&mut m.target, || test_sampling(0), &prompt, 3, &m.eos);
    // 300 samples keep a debug build near 30 s; the exact side has no sampling noise.
    let (got, s) = speculative_counts(&mut m, &prompt, 0..300);
    let h = goodness_of_fit(&got, &exact, 5.0);
    report("draft model vs exact", &h, exact.len(), &s, t);
    assert!(h.df >= 8, "too few outcomes to test: {h:?}");
    assert!(h.p_value >= ALPHA, "{h:?}");
    assert!(s.accepted > 0 && s.accepted < s.drafted);
    // The test has power at this size: a verifier that forgot the temperature (temp 1
    // instead of 1.5, the same top-8 supports) would be told apart. A subtler shift (temp
    // 1.2) would not: the 2000-seed test below, in a release build, is the sensitive one.
    let cooler = exact_first_tokens(&mut m.target, || sampling(1.0, 8, 0), &prompt, 3, &m.eos);
    let counts: Counts = cooler
        .iter()
        .map(|(k, &p)| (k.clone(), (p * 300.0).round() as u64))
        .collect();
    let h = goodness_of_fit(&counts, &exact, 5.0);
    eprintln!(
        "temp 1 expected counts vs temp 1.5: χ² = {:.1}, df = {}, p = {:.2e}",
        h.statistic, h.df, h.p_value
    );
    assert!(h.p_value < ALPHA, "{h:?}");
}

#[test]
#[ignore = "2000 + 2000 generations: run with --release -- --ignored"]
fn sampling_with_the_draft_model_matches_plain_sampling_over_2000_seeds() {
    const SEEDS: u64 = 2000;
    let t = Instant::now();
    let mut m = models();
    let prompt = m.encode(SPREAD);
    let mut want = Counts::new();
    for seed in 0..SEEDS {
        let g = m.plain(&mut test_sampling(seed), &prompt, 3);
        *want.entry(g.tokens).or_insert(0) += 1;
    }
    let (got, s) = speculative_counts(&mut m, &prompt, 1_000_000..1_000_000 + SEEDS);
    let h = homogeneity(&want, &got, 5.0);
    report("plain vs draft model", &h, want.len().max(got.len()), &s, t);
    assert!(h.df >= 10, "too few outcomes to test: {h:?}");
    assert!(h.p_value >= ALPHA, "{h:?}");
}
