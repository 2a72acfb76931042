//! Shared helpers of the engine's tests: a greedy pipeline.
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
