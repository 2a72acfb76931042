//! The stages a run knows and turning `--sampler` text into a pipeline: the [`Registry`] is
//! built once per command ([`registry`]: the built-ins plus the stages of the plugins the
//! command loads) and passed to every function that parses or builds a pipeline.

use std::path::PathBuf;

use sieve_core::Pipeline;
use sieve_core::{BuildContext, Registry};
use sieve_dsl::{Compiled, Parsed};
use sieve_plugin_host::Plugin;

use crate::error::{Failure, ResultExt};
use crate::plugins;

/// The registry of a command: the built-ins, then the stages of the plugins named by `files`
/// (`--plugin`) and of the libraries in the `SIEVE_PLUGIN_PATH` directories.
///
/// Each stage name is defined once. A stage that a `--plugin` file defines and a library found
/// on `SIEVE_PLUGIN_PATH` defines too is taken from the `--plugin` file, with a note on stderr
/// (an installed copy does not stand in the way of a development build); any other clash (two
/// `--plugin` files, two path libraries, a plugin and a built-in) is an error.
///
/// # Errors
/// [`Failure::Usage`] naming the file (and the stage, for a clash).
pub fn registry(files: &[PathBuf]) -> Result<Registry, Failure> {
    let explicit: Vec<PathBuf> = files.iter().map(|f| plugins::canonical(f)).collect();
    let var = std::env::var_os(plugins::PATH_VAR);
    let files = plugins::discover(files, var.as_deref()).usage()?;
    let loaded = files
        .iter()
        .map(|f| plugins::load(f))
        .collect::<anyhow::Result<Vec<Plugin>>>()
        .usage()?;
    let is_explicit = |p: &Plugin| explicit.contains(&plugins::canonical(p.origin().as_ref()));
    // `--plugin` files first, so their stages are taken when a path library repeats one.
    let (first, scanned): (Vec<Plugin>, Vec<Plugin>) = loaded.into_iter().partition(is_explicit);
    let mut registry = sieve_samplers::builtin_registry();
    for plugin in &first {
        plugin.register(&mut registry).usage()?;
    }
    for plugin in &scanned {
        for entry in plugin.entries() {
            let by = first
                .iter()
                .find(|p| p.stages().any(|s| s.name == entry.info.name));
            match by {
                Some(by) => crate::error::write_stderr(&format!(
                    "note: stage `{}` is defined by --plugin {} and by {} (found on {}); \
                     using the --plugin one\n",
                    entry.info.name,
                    by.origin(),
                    plugin.origin(),
                    plugins::PATH_VAR,
                ))?,
                None => registry.register(entry).usage()?,
            }
        }
    }
    Ok(registry)
}

/// Parses and validates `text` against `registry` without building a stage: the cheap check a
/// command runs before it does anything slow (such as loading a model's weights). A command
/// parses its pipeline once, here, and builds every copy it needs from the result ([`build`],
/// [`copies`]).
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic (source line, caret, help).
pub fn check(text: &str, registry: &Registry) -> Result<Parsed, Failure> {
    Parsed::parse(text, registry).map_err(|d| Failure::Pipeline(d.render(text)))
}

/// Builds the stages of `parsed` with the build context `cx`.
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic, placed in the text as written.
pub fn build(
    parsed: &Parsed,
    registry: &Registry,
    cx: &BuildContext<'_>,
) -> Result<Pipeline, Failure> {
    parsed
        .build(registry, cx)
        .map_err(|d| Failure::Pipeline(d.render(parsed.source())))
}

/// Builds `n` copies of `parsed`, copy `i` with seed `cx.seed + i`.
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic, placed in the text as written.
pub fn copies(
    parsed: &Parsed,
    registry: &Registry,
    cx: &BuildContext<'_>,
    n: usize,
) -> Result<Vec<Pipeline>, Failure> {
    parsed
        .copies(registry, cx, n)
        .map_err(|d| Failure::Pipeline(d.render(parsed.source())))
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
