//! `sieve check`: compile a pipeline and print its canonical form.

use sieve_core::BuildContext;

use crate::args::CheckArgs;
use crate::error::Failure;
use crate::pipeline;

/// Compiles the pipeline fully (so stage constructors check their arguments too, with the
/// default build context) and returns its canonical form and a newline.
///
/// # Errors
/// [`Failure::Pipeline`] with the rendered diagnostic.
pub fn run(args: &CheckArgs) -> Result<String, Failure> {
    let compiled = pipeline::compile(&args.pipeline, BuildContext::default().seed)?;
    Ok(format!("{}\n", compiled.spec))
}
