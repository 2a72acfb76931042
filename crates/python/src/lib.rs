//! # sieve-python
//!
//! The native half of the `sieve` Python package (`sieve._native`): sieve's pipelines (the
//! built-in stages and plugins, parsed by `sieve-dsl`, run by `sieve-core`) for Python code,
//! transformers' `generate` and vLLM. The Python half (`python/sieve/`) converts numpy
//! arrays and torch tensors to addresses ([`raw`]), defines the exception classes and the
//! engine adapters.
//!
//! - [`sequence::Sequence`]: one sequence's pipeline and what an engine asks of it per step;
//! - [`pipeline`]: the `Pipeline` class over it; [`batch`]: many rows at once, in parallel
//!   on [`pool`]'s threads;
//! - [`vocab`]: `Vocab` from token bytes or a `tokenizer.json`;
//! - [`registry`]: built-ins plus loaded plugins; [`listing`]: `check`, `samplers`,
//!   `load_plugin`;
//! - [`error`]: one error enum, its exceptions, and the panic guard at the boundary.
//!
//! No tensor library is linked: `cargo tree` shows no Burn.
#![warn(missing_docs)]

pub mod batch;
pub mod error;
pub mod listing;
pub mod pipeline;
pub mod pool;
pub mod raw;
pub mod registry;
pub mod sequence;
pub mod vocab;

use pyo3::prelude::*;

/// The `sieve._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(listing::check, m)?)?;
    m.add_function(wrap_pyfunction!(listing::parse, m)?)?;
    m.add_function(wrap_pyfunction!(listing::samplers, m)?)?;
    m.add_function(wrap_pyfunction!(listing::load_plugin, m)?)?;
    m.add_function(wrap_pyfunction!(batch::step_rows, m)?)?;
    m.add_function(wrap_pyfunction!(error::set_classes, m)?)?;
    m.add_class::<pipeline::PyPipeline>()?;
    m.add_class::<vocab::PyVocab>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
