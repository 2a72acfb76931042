//! `sieve check`: compile a pipeline and print its canonical form.

use clap::Args;
use sieve_core::{BuildContext, Registry};

use crate::error::Failure;
use crate::pipeline;
use crate::plugins::PluginArgs;

/// `sieve check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The pipeline, e.g. "penalty(1.1) | temp(0.7) | top_k(40)"
    #[arg(value_name = "PIPELINE")]
    pub pipeline: String,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Compiles the pipeline fully (so stage constructors check their arguments too, with the
/// default build context) and returns its canonical form and a newline.
///
/// # Errors
/// [`Failure::Pipeline`] with the rendered diagnostic.
pub fn run(args: &CheckArgs, registry: &Registry) -> Result<String, Failure> {
    let compiled = pipeline::compile(&args.pipeline, registry, &BuildContext::default())?;
    Ok(format!("{}\n", compiled.spec))
}
