//! [`Chain`]: a compiled pipeline you run over logits.

use sieve_core::{BuildContext, Candidates, Context, Pipeline, Registry};
use sieve_dsl::PipelineSpec;

use crate::outcome::{by_probability, survivors, Outcome, StageStep};
use crate::Error;

/// A pipeline compiled from its text, ready to run over logits.
///
/// Every run starts from the stages' freshly built state: [`Chain::apply`] and
/// [`Chain::draws`] reset the stages first (random stages replay their seed), so the same call
/// always gives the same result.
#[derive(Debug)]
pub struct Chain {
    spec: PipelineSpec,
    pipeline: Pipeline,
    seed: u64,
}

impl Chain {
    /// Compiles `text` against the built-in stages; random stages whose `seed` is `-1` use
    /// `seed`.
    ///
    /// # Errors
    /// [`Error::Pipeline`] with the rendered diagnostic.
    pub fn new(text: &str, seed: u64) -> Result<Chain, Error> {
        let registry = sieve_samplers::builtin_registry();
        Chain::with_registry(text, &registry, &BuildContext { seed, vocab: None })
    }

    /// Compiles `text` against `registry` (built-ins plus, say, your own stages) with the
    /// build context `cx` (the run's seed, and a vocabulary for stages that name tokens by
    /// their text).
    ///
    /// # Errors
    /// [`Error::Pipeline`] with the rendered diagnostic.
    pub fn with_registry(
        text: &str,
        registry: &Registry,
        cx: &BuildContext<'_>,
    ) -> Result<Chain, Error> {
        let compiled = sieve_dsl::compile(text, registry, cx).map_err(|diagnostic| {
            let rendered = diagnostic.render(text);
            Error::Pipeline {
                diagnostic,
                rendered,
            }
        })?;
        Ok(Chain {
            spec: compiled.spec,
            pipeline: compiled.pipeline,
            seed: cx.seed,
        })
    }

    /// The pipeline in canonical form: every argument named, defaults filled, `dist`
    /// appended when the text does not end in a selector.
    pub fn canonical(&self) -> String {
        self.spec.to_string()
    }

    /// The built stages, for driving them yourself.
    pub fn pipeline_mut(&mut self) -> &mut Pipeline {
        &mut self.pipeline
    }

    /// Runs the pipeline once on `logits` (token `i` has logit `logits[i]`) after `history`:
    /// the history is the step's context (all of it counted as prompt) and is passed to every
    /// stage's `accept` first, as `sieve apply --history` does.
    ///
    /// # Errors
    /// [`Error::Input`] for a NaN or `+inf` logit or a history token beyond the vocabulary;
    /// [`Error::Run`] when a stage fails.
    pub fn apply(&mut self, logits: &[f32], history: &[u32]) -> Result<Outcome, Error> {
        check_input(logits, history)?;
        self.pipeline.reset();
        for &token in history {
            self.pipeline.accept(token);
        }
        let mut candidates = Candidates::from_logits(logits);
        let mut trace = vec![StageStep::observe("input", &candidates)];
        let selected = self.pipeline.sample_observed(
            &mut candidates,
            &Context::with_history(history),
            |stage, c| trace.push(StageStep::observe(stage, c)),
        )?;
        Ok(Outcome {
            pipeline: self.canonical(),
            seed: self.seed,
            selected,
            survivors: by_probability(&survivors(&candidates)),
            trace,
        })
    }

    /// Draws `n` tokens the way a decoding loop does, with the same `logits` at every step:
    /// every `prompt` token is first passed to `accept`; then each step samples with the
    /// history so far (prompt, then the tokens drawn), accepts the token and appends it.
    /// Returns the drawn tokens.
    ///
    /// # Errors
    /// As [`Chain::apply`].
    pub fn draws(&mut self, logits: &[f32], prompt: &[u32], n: usize) -> Result<Vec<u32>, Error> {
        check_input(logits, prompt)?;
        self.pipeline.reset();
        Ok(draw_sequence(&mut self.pipeline, logits, prompt, n)?)
    }
}

/// Draws `n` tokens from `pipeline` the way a decoding loop does, with the same `logits` at
/// every step: every `prompt` token is first passed to `accept`; then each step samples with
/// the history so far (prompt, then the tokens drawn; [`Context::prompt_len`] marks the
/// prompt), accepts the token and appends it. Returns the drawn tokens. The pipeline is not
/// reset first ([`Chain::draws`] does that and checks the input).
///
/// # Errors
/// The first step's error.
pub fn draw_sequence(
    pipeline: &mut Pipeline,
    logits: &[f32],
    prompt: &[u32],
    n: usize,
) -> Result<Vec<u32>, sieve_core::Error> {
    for &token in prompt {
        pipeline.accept(token);
    }
    let mut history = prompt.to_vec();
    let mut candidates = Candidates::new();
    for step in 0..n {
        candidates.load(logits);
        let cx = Context {
            history: &history,
            prompt_len: prompt.len(),
            vocab: None,
            step,
        };
        let token = pipeline.sample(&mut candidates, &cx)?;
        pipeline.accept(token);
        history.push(token);
    }
    Ok(history.split_off(prompt.len()))
}

/// Refuses NaN and `+inf` logits and history tokens beyond the vocabulary, naming the
/// position.
fn check_input(logits: &[f32], history: &[u32]) -> Result<(), Error> {
    if let Some((i, x)) = Candidates::first_non_finite(logits) {
        return Err(Error::Input(format!(
            "logit {i} is {x}; logits must be finite or -inf"
        )));
    }
    if let Some((i, &t)) = history
        .iter()
        .enumerate()
        .find(|&(_, &t)| t as usize >= logits.len())
    {
        return Err(Error::Input(format!(
            "history token {i} is {t}, beyond the {} logits",
            logits.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_is_repeatable_and_resets_state() {
        let mut chain = Chain::new("penalty(2.0) | greedy", 1).unwrap();
        let first = chain.apply(&[1.0, 1.5, 0.0], &[1]).unwrap();
        // Token 1 (logit 1.5) is penalized to 0.75, so token 0 wins.
        assert_eq!(first.selected, 0);
        assert_eq!(chain.apply(&[1.0, 1.5, 0.0], &[1]).unwrap(), first);
        assert_eq!(chain.apply(&[1.0, 1.5, 0.0], &[]).unwrap().selected, 1);
    }

    #[test]
    fn bad_input_and_bad_text_are_errors() {
        let err = Chain::new("top_q(1)", 0).unwrap_err();
        assert!(
            err.to_string().contains("did you mean `top_k` or `top_p`?"),
            "{err}"
        );
        let mut chain = Chain::new("greedy", 0).unwrap();
        let err = chain.apply(&[0.0, f32::NAN], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "logit 1 is NaN; logits must be finite or -inf"
        );
        let err = chain.draws(&[0.0, 1.0], &[2], 3).unwrap_err();
        assert_eq!(err.to_string(), "history token 0 is 2, beyond the 2 logits");
        let err = chain.apply(&[f32::NEG_INFINITY; 2], &[]).unwrap_err();
        assert!(matches!(err, Error::Run(_)), "{err:?}");
    }

    #[test]
    fn draws_restart_from_the_seed() {
        let mut chain = Chain::new("temp(1.5) | dist", 7).unwrap();
        let logits = [0.0, 0.5, 1.0, 1.5];
        let a = chain.draws(&logits, &[], 20).unwrap();
        assert_eq!(a.len(), 20);
        assert_eq!(chain.draws(&logits, &[], 20).unwrap(), a);
        let other = Chain::new("temp(1.5) | dist", 8)
            .unwrap()
            .draws(&logits, &[], 20)
            .unwrap();
        assert_ne!(other, a);
    }
}
