//! Shared helpers of the engine's tests: a greedy stage.
#![allow(dead_code)]

use sieve_core::{Candidates, Context, Error as CoreError, Pipeline, Sampler};

/// Selects the first candidate with the largest logit (the lowest id on ties), as
/// transformers' greedy search (`argmax`) does.
pub struct Argmax;

impl Sampler for Argmax {
    fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), CoreError> {
        let mut best: Option<(usize, u32, f32)> = None;
        for (pos, (id, logit)) in c.iter().enumerate() {
            let better = match best {
                None => true,
                Some((_, bid, bl)) => logit > bl || (logit == bl && id < bid),
            };
            if better {
                best = Some((pos, id, logit));
            }
        }
        if let Some((pos, _, _)) = best {
            c.select(pos);
        }
        Ok(())
    }
}

/// A pipeline of [`Argmax`] alone.
pub fn greedy_pipeline() -> Pipeline {
    Pipeline::new(vec![("argmax".to_string(), Box::new(Argmax))])
}
