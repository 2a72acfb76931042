//! [`Sequence`]: one sequence's pipeline (its stages' state, its random stream) and the two
//! things an engine asks of it each step: pick the token ([`Sequence::select`]), or give the
//! distribution the selector would draw from ([`Sequence::distribution`]).
//!
//! Pure Rust: the Python classes (`Pipeline`, `Batch`) are thin wrappers over it.

use std::sync::Arc;

use sieve_core::{BuildContext, Candidates, Context, Pipeline, Registry, Vocab};
use sieve_dsl::Parsed;

use crate::error::Error;

mod scratch;

use scratch::with_candidates;

/// The tokens before a step: `tokens[..prompt_len]` is the prompt, the rest was generated.
#[derive(Debug, Clone, Copy)]
pub struct History<'a> {
    /// Prompt then generated tokens.
    pub tokens: &'a [u32],
    /// How many of `tokens` are the prompt.
    pub prompt_len: usize,
}

impl<'a> History<'a> {
    /// A history that is all prompt (what `sieve apply --history` gives).
    pub fn prompt(tokens: &'a [u32]) -> Self {
        History {
            tokens,
            prompt_len: tokens.len(),
        }
    }
}

/// One sequence's built pipeline.
pub struct Sequence {
    parsed: Arc<Parsed>,
    registry: Arc<Registry>,
    vocab: Option<Arc<Vocab>>,
    seed: u64,
    pipeline: Pipeline,
    /// Every token passed to `accept` since the last reset (replayed by `fork`).
    accepted: Vec<u32>,
}

impl std::fmt::Debug for Sequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequence")
            .field("pipeline", &self.canonical())
            .field("seed", &self.seed)
            .field("accepted", &self.accepted.len())
            .finish()
    }
}

impl Sequence {
    /// Parses `text` against `registry` and builds it with `seed` (for stages whose seed is
    /// `-1`) and `vocab` (for stages that name tokens by their text).
    ///
    /// # Errors
    /// [`Error::Pipeline`] with the caret diagnostic.
    pub fn new(
        text: &str,
        seed: u64,
        vocab: Option<Arc<Vocab>>,
        registry: Arc<Registry>,
    ) -> Result<Sequence, Error> {
        let parsed = Parsed::parse(text, &registry).map_err(|d| Error::pipeline(&d, text))?;
        Sequence::build(Arc::new(parsed), seed, vocab, registry)
    }

    /// Builds `parsed` (parsed once, built for many sequences).
    ///
    /// # Errors
    /// [`Error::Pipeline`] when a stage constructor refuses an argument.
    pub fn build(
        parsed: Arc<Parsed>,
        seed: u64,
        vocab: Option<Arc<Vocab>>,
        registry: Arc<Registry>,
    ) -> Result<Sequence, Error> {
        let cx = BuildContext {
            seed,
            vocab: vocab.as_deref(),
        };
        let pipeline = parsed
            .build(&registry, &cx)
            .map_err(|d| Error::pipeline(&d, parsed.source()))?;
        Ok(Sequence {
            parsed,
            registry,
            vocab,
            seed,
            pipeline,
            accepted: Vec::new(),
        })
    }

    /// The pipeline in canonical form.
    pub fn canonical(&self) -> String {
        self.parsed.spec().to_string()
    }

    /// The seed it was built with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The name of the selector (the last stage).
    pub fn selector(&self) -> &str {
        self.pipeline.selector().unwrap_or("")
    }

    /// The tokens accepted since the last reset.
    pub fn accepted(&self) -> &[u32] {
        &self.accepted
    }

    /// Passes `token` to every stage (after it was chosen, whoever chose it).
    pub fn accept(&mut self, token: u32) {
        self.pipeline.accept(token);
        self.accepted.push(token);
    }

    /// Back to the freshly built state: random stages replay their seed, nothing accepted.
    pub fn reset(&mut self) {
        self.pipeline.reset();
        self.accepted.clear();
    }

    /// A new sequence with the same pipeline and vocabulary, its random stages seeded with
    /// `seed`, and every token this one accepted since its reset accepted again (so
    /// penalties, DRY and grammars are where this one is).
    ///
    /// # Errors
    /// As [`Sequence::build`].
    pub fn fork(&self, seed: u64) -> Result<Sequence, Error> {
        let mut other = Sequence::build(
            Arc::clone(&self.parsed),
            seed,
            self.vocab.clone(),
            Arc::clone(&self.registry),
        )?;
        for &t in &self.accepted {
            other.accept(t);
        }
        Ok(other)
    }

    /// Checks the input and loads `logits` into `c` for the pipeline's step at `cx`: copied
    /// into the candidates' own buffer in the same read that checks for NaN and `+inf`, or,
    /// when the pipeline's stages before a `top_k` allow it, only the candidates that can
    /// survive it ([`Pipeline::load`], the same tokens and distributions bit for bit).
    fn load(
        pipeline: &mut Pipeline,
        c: &mut Candidates,
        logits: &[f32],
        cx: &Context<'_>,
    ) -> Result<(), Error> {
        if let Some((i, x)) = pipeline.load(c, logits, cx) {
            return Err(Error::Input(format!(
                "logit {i} is {x}; logits must be finite or -inf"
            )));
        }
        Ok(())
    }

    /// Runs every stage on `logits` after `history` and returns the selected token. Nothing
    /// is accepted: call [`Sequence::accept`] with the token the sequence goes on with.
    ///
    /// # Errors
    /// [`Error::Input`] for bad logits or history, [`Error::Sampling`] when a stage fails.
    pub fn select(&mut self, logits: &[f32], history: History<'_>) -> Result<u32, Error> {
        with_candidates(|c| self.select_in(c, logits, history))
    }

    /// [`Sequence::select`] in the candidates `c`.
    fn select_in(
        &mut self,
        c: &mut Candidates,
        logits: &[f32],
        history: History<'_>,
    ) -> Result<u32, Error> {
        check_history(logits, history)?;
        let cx = context(history, self.vocab.as_deref());
        Sequence::load(&mut self.pipeline, c, logits, &cx)?;
        self.pipeline
            .sample(c, &cx)
            .map_err(|e| Error::Sampling(e.to_string()))
    }

    /// Runs every stage but the selector on `logits` after `history`, leaving in `c` the
    /// distribution the selector would draw from.
    fn transform_in(
        &mut self,
        c: &mut Candidates,
        logits: &[f32],
        history: History<'_>,
    ) -> Result<(), Error> {
        check_history(logits, history)?;
        let cx = context(history, self.vocab.as_deref());
        Sequence::load(&mut self.pipeline, c, logits, &cx)?;
        self.pipeline
            .transform(c, &cx)
            .map_err(|e| Error::Sampling(e.to_string()))
    }

    /// Runs every stage but the selector on `logits` after `history` and returns the
    /// distribution the selector would draw from as (id, logit) pairs: the logits with any
    /// temperature applied (their softmax is the distribution), `-inf` ones left out, in
    /// candidate order.
    ///
    /// # Errors
    /// As [`Sequence::select`].
    pub fn distribution(
        &mut self,
        logits: &[f32],
        history: History<'_>,
    ) -> Result<Vec<(u32, f32)>, Error> {
        with_candidates(|c| {
            self.transform_in(c, logits, history)?;
            Ok(kept(c).collect())
        })
    }

    /// The distribution as (ids, probabilities), as sieve computes them (its own softmax),
    /// most likely first (ties by id); removed tokens are left out.
    ///
    /// # Errors
    /// As [`Sequence::select`].
    pub fn probabilities(
        &mut self,
        logits: &[f32],
        history: History<'_>,
    ) -> Result<(Vec<u32>, Vec<f32>), Error> {
        with_candidates(|c| {
            self.transform_in(c, logits, history)?;
            let ids: Vec<u32> = (0..c.len()).map(|i| c.id(i)).collect();
            let kept: Vec<bool> = (0..ids.len())
                .map(|i| c.logit(i) > f32::NEG_INFINITY)
                .collect();
            let probs = c.softmax();
            let mut pairs: Vec<(u32, f32)> = ids
                .into_iter()
                .zip(probs.iter().copied())
                .zip(kept)
                .filter_map(|(pair, kept)| kept.then_some(pair))
                .collect();
            pairs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            Ok(pairs.into_iter().unzip())
        })
    }

    /// Writes `row` as what the engine's own sampling step should see: for `Select`, the
    /// token chosen here at 0 and every other entry `-inf` (so greedy picks it, and so does
    /// any sampler); for `Distribution`, the pipeline's distribution as logits (`-inf` for
    /// removed tokens). `row` is both input and output. Returns the selected token for
    /// `Select`.
    ///
    /// Costs one read of the row (the load) and one write (the fill), beside what the stages
    /// read of the candidates.
    ///
    /// # Errors
    /// As [`Sequence::select`]; `row` is left as it was.
    pub fn step_row(
        &mut self,
        row: &mut [f32],
        history: History<'_>,
        mode: Mode,
    ) -> Result<Option<u32>, Error> {
        with_candidates(|c| match mode {
            Mode::Select => {
                let token = self.select_in(c, row, history)?;
                sieve_core::math::fill(row, f32::NEG_INFINITY);
                row[token as usize] = 0.0;
                Ok(Some(token))
            }
            Mode::Distribution => {
                self.transform_in(c, row, history)?;
                sieve_core::math::fill(row, f32::NEG_INFINITY);
                for (id, x) in kept(c) {
                    row[id as usize] = x;
                }
                Ok(None)
            }
        })
    }
}

/// The candidates' (id, logit) pairs with any pending scale applied (as
/// [`Candidates::logits`] applies it), `-inf` ones left out, in candidate order.
fn kept(c: &Candidates) -> impl Iterator<Item = (u32, f32)> + '_ {
    c.iter().filter(|&(_, x)| x > f32::NEG_INFINITY)
}

/// What [`Sequence::step_row`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// sieve's selector picks: one-hot row.
    Select,
    /// Every stage but the selector: the distribution, for the engine to draw from.
    Distribution,
}

impl Mode {
    /// `"select"` or `"distribution"`.
    ///
    /// # Errors
    /// [`Error::Input`] for anything else.
    pub fn parse(text: &str) -> Result<Mode, Error> {
        match text {
            "select" => Ok(Mode::Select),
            "distribution" => Ok(Mode::Distribution),
            other => Err(Error::Input(format!(
                "mode must be \"select\" or \"distribution\", not {other:?}"
            ))),
        }
    }
}

/// The step context: the generated tokens are those after the prompt.
fn context<'a>(history: History<'a>, vocab: Option<&'a Vocab>) -> Context<'a> {
    Context {
        history: history.tokens,
        prompt_len: history.prompt_len,
        vocab,
        step: history.tokens.len() - history.prompt_len,
    }
}

/// Refuses empty logits, history tokens beyond the logits and a prompt longer than the
/// history, naming the position.
fn check_history(logits: &[f32], history: History<'_>) -> Result<(), Error> {
    if logits.is_empty() {
        return Err(Error::Input("the logits are empty".into()));
    }
    if let Some((i, &t)) = history
        .tokens
        .iter()
        .enumerate()
        .find(|&(_, &t)| t as usize >= logits.len())
    {
        return Err(Error::Input(format!(
            "history token {i} is {t}, beyond the {} logits",
            logits.len()
        )));
    }
    if history.prompt_len > history.tokens.len() {
        return Err(Error::Input(format!(
            "prompt_len {} is longer than the history ({} tokens)",
            history.prompt_len,
            history.tokens.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
