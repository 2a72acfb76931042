//! A built chain of stages.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::prefilter::{self, Prefilter};
use crate::{Candidates, Context, Error, Sampler};

/// A chain of stages, run in order on one step's candidates; the last one selects.
pub struct Pipeline {
    /// Each stage with the registry name it was built under.
    stages: Vec<(String, Box<dyn Sampler>)>,
}

impl core::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Pipeline {
    /// A pipeline of these stages, in run order, each with the name it is known by (its
    /// [`Stage::NAME`](crate::Stage::NAME)), used in error messages and [`Pipeline::names`].
    pub fn new(stages: Vec<(String, Box<dyn Sampler>)>) -> Self {
        Pipeline { stages }
    }

    /// The stages' names in run order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.stages.iter().map(|(name, _)| name.as_str())
    }

    /// Number of stages.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether there is no stage.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Runs every stage and returns the selected token id.
    ///
    /// # Errors
    /// [`Error::NoFiniteCandidates`] naming the stage after which no finite candidate was left,
    /// [`Error::NoSelection`] when the last stage selected nothing, or a stage's own error.
    pub fn sample(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<u32, Error> {
        self.sample_observed(candidates, cx, |_, _| {})
    }

    /// Like [`Pipeline::sample`], calling `observe(stage_name, candidates)` after each stage
    /// (for `sieve apply --trace`).
    ///
    /// # Errors
    /// As [`Pipeline::sample`].
    pub fn sample_observed(
        &mut self,
        candidates: &mut Candidates,
        cx: &Context<'_>,
        mut observe: impl FnMut(&str, &mut Candidates),
    ) -> Result<u32, Error> {
        candidates.clear_selection();
        if !candidates.has_finite() {
            return Err(Error::NoFiniteCandidates {
                stage: "(input)".to_string(),
            });
        }
        let last = self.stages.last().ok_or(Error::EmptyPipeline)?.0.clone();
        for (name, stage) in &mut self.stages {
            stage.apply(candidates, cx)?;
            if !candidates.has_finite() {
                return Err(Error::NoFiniteCandidates {
                    stage: name.to_string(),
                });
            }
            observe(name, candidates);
        }
        candidates
            .selected_id()
            .ok_or(Error::NoSelection { stage: last })
    }

    /// The name of the last stage: the selector of a compiled pipeline (the DSL appends
    /// `dist` to a pipeline that does not end in one). `None` for an empty pipeline.
    pub fn selector(&self) -> Option<&str> {
        self.stages.last().map(|(name, _)| name.as_str())
    }

    /// Runs every stage but the last (the selector), leaving in `candidates` the
    /// distribution the selector would draw from: what beam search scores and what
    /// speculative decoding compares between draft and target.
    ///
    /// # Errors
    /// [`Error::NoFiniteCandidates`] naming the stage after which no finite candidate was
    /// left, or a stage's own error. An empty pipeline transforms nothing.
    pub fn transform(
        &mut self,
        candidates: &mut Candidates,
        cx: &Context<'_>,
    ) -> Result<(), Error> {
        candidates.clear_selection();
        if !candidates.has_finite() {
            return Err(Error::NoFiniteCandidates {
                stage: "(input)".to_string(),
            });
        }
        let before_selector = self.stages.len().saturating_sub(1);
        for (name, stage) in &mut self.stages[..before_selector] {
            stage.apply(candidates, cx)?;
            if !candidates.has_finite() {
                return Err(Error::NoFiniteCandidates {
                    stage: name.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Loads a row of logits into `candidates` for this pipeline's step at `cx`: all of them
    /// ([`Candidates::load_checked_from`]), or, when the stages before a `top_k` tell what
    /// they do ([`Pipeline::prefilter`]), only those that can survive it
    /// ([`Candidates::load_best_checked_from`]). Either way [`Pipeline::sample`] and
    /// [`Pipeline::transform`] then give the same token and the same distribution, bit for bit;
    /// the second reads the row once and copies a few hundred candidates instead of all.
    ///
    /// Returns the first position holding NaN or `+inf`, with its value, as
    /// [`Candidates::load_checked_from`] does (the candidates then hold the whole row,
    /// sanitized).
    pub fn load(
        &mut self,
        candidates: &mut Candidates,
        row: &[f32],
        cx: &Context<'_>,
    ) -> Option<(usize, f32)> {
        match self.prefilter(cx, row.len()) {
            Some(plan) => candidates.load_best_checked_from(row, plan.best, &plan.also),
            None => candidates.load_checked_from(row),
        }
    }

    /// The candidates that can survive this pipeline's first `top_k` on a row of `n` logits
    /// at step `cx`, when every stage before it tells what it does ([`crate::prefilter`]
    /// explains why those are enough); `None` otherwise, or when the `top_k` keeps more than
    /// one token in 16. Only the stages before the selector count.
    pub fn prefilter(&mut self, cx: &Context<'_>, n: usize) -> Option<Prefilter> {
        let before_selector = self.stages.len().saturating_sub(1);
        let stages = self.stages[..before_selector].iter_mut();
        prefilter::plan(stages.map(|(_, stage)| stage.as_mut()), cx, n)
    }

    /// Passes the chosen token to every stage.
    pub fn accept(&mut self, token: u32) {
        for (_, stage) in &mut self.stages {
            stage.accept(token);
        }
    }

    /// Resets every stage.
    pub fn reset(&mut self) {
        for (_, stage) in &mut self.stages {
            stage.reset();
        }
    }
}
