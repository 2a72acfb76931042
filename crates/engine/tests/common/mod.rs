//! Shared helpers of the engine's tests: a greedy pipeline and [`HashModel`], a
//! weightless multi-sequence model.
#![allow(dead_code)]

use sieve_core::{Pipeline, Sampler};
use sieve_samplers::greedy::Greedy;

/// A pipeline of the built-in `greedy` stage alone: the first candidate with the largest
/// logit (the lowest id on ties), as transformers' greedy search (`argmax`) selects.
pub fn greedy_pipeline() -> Pipeline {
    Pipeline::new(vec![greedy()])
}

/// The built-in `greedy` stage, named as a pipeline names it.
pub fn greedy() -> (String, Box<dyn Sampler>) {
    ("greedy".to_string(), Box::new(Greedy::new()))
}

#[allow(unused_imports)] // not every test file uses it
pub use sieve_engine::testing::HashModel;

/// Token `i` is the letter `'a' + i % 26`.
pub struct Letters;

impl sieve_engine::Detokenize for Letters {
    fn decode(&self, ids: &[u32]) -> sieve_engine::Result<String> {
        Ok(ids
            .iter()
            .map(|&i| char::from(b'a' + (i % 26) as u8))
            .collect())
    }
}
