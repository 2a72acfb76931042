//! The stages a run knows and turning `--sampler` text into a pipeline: the [`Registry`] is
//! built once per command ([`registry`]: the built-ins plus the stages of the plugins the
//! command loads) and passed to every function that parses or builds a pipeline.

use std::path::PathBuf;

use sieve_core::plugin::host::Plugin;
use sieve_core::{BuildContext, Registry};
use sieve_dsl::{Compiled, PipelineSpec};

use crate::error::{Failure, ResultExt};
use crate::plugins;

/// The registry of a command: the built-ins, then the stages of the plugins named by `files`
/// (`--plugin`) and by the `SIEVE_PLUGIN_PATH` directories, each stage name once (a plugin may
/// not redefine a built-in's or another plugin's stage).
///
/// # Errors
/// [`Failure::Usage`] naming the file (and the stage, for a clash).
pub fn registry(files: &[PathBuf]) -> Result<Registry, Failure> {
    let var = std::env::var_os(plugins::PATH_VAR);
    let files = plugins::discover(files, var.as_deref()).usage()?;
    let loaded = files
        .iter()
        .map(|f| plugins::load(f))
        .collect::<anyhow::Result<Vec<Plugin>>>()
        .usage()?;
    let mut registry = sieve_samplers::builtin_registry();
    for plugin in &loaded {
        plugin.register(&mut registry).usage()?;
    }
    Ok(registry)
}

/// Parses and validates `text` against `registry` without building a stage: the cheap check a
/// command runs before it does anything slow (such as loading a model's weights).
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic (source line, caret, help).
pub fn check(text: &str, registry: &Registry) -> Result<PipelineSpec, Failure> {
    PipelineSpec::parse(text, registry).map_err(|d| Failure::Pipeline(d.render(text)))
}

/// Parses, validates and builds `text` with the build context `cx` (the run's seed, used by
/// stages whose `seed` is `-1`; a model's vocabulary, for stages that resolve token text).
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic (source line, caret, help).
pub fn compile(
    text: &str,
    registry: &Registry,
    cx: &BuildContext<'_>,
) -> Result<Compiled, Failure> {
    sieve_dsl::compile(text, registry, cx).map_err(|d| Failure::Pipeline(d.render(text)))
}
