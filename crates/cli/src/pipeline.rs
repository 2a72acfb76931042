//! Turning `--sampler` text into a built pipeline, with the stages this run knows: the
//! built-ins and the stages of the plugins the command loaded ([`use_plugins`]).

use std::cell::RefCell;
use std::path::PathBuf;

use sieve_core::plugin::host::Plugin;
use sieve_core::{BuildContext, Registry};
use sieve_dsl::Compiled;

use crate::error::{Failure, ResultExt};
use crate::plugins;

thread_local! {
    /// The plugins of the command this thread runs (set by [`use_plugins`]).
    static PLUGINS: RefCell<Vec<Plugin>> = const { RefCell::new(Vec::new()) };
}

/// Loads the plugins named by `files` (`--plugin`) and by the `SIEVE_PLUGIN_PATH`
/// directories, checks that no two stages share a name (nor a plugin stage a built-in's), and
/// makes them part of [`registry`] for the commands this thread runs next. [`crate::execute`]
/// calls it before every command.
///
/// # Errors
/// [`Failure::Usage`] naming the file (and the stage, for a clash).
pub fn use_plugins(files: &[PathBuf]) -> Result<(), Failure> {
    let var = std::env::var_os(plugins::PATH_VAR);
    let files = plugins::discover(files, var.as_deref()).usage()?;
    let loaded = files
        .iter()
        .map(|f| plugins::load(f))
        .collect::<anyhow::Result<Vec<Plugin>>>()
        .usage()?;
    let mut check = sieve_samplers::builtin_registry();
    for plugin in &loaded {
        plugin.register(&mut check).usage()?;
    }
    PLUGINS.with(|p| *p.borrow_mut() = loaded);
    Ok(())
}

/// Every stage `sieve` knows: the built-ins, and the stages of the plugins of
/// [`use_plugins`].
pub fn registry() -> Registry {
    let mut registry = sieve_samplers::builtin_registry();
    PLUGINS.with(|p| {
        for plugin in p.borrow().iter() {
            // `use_plugins` registered the same plugins in the same order without a clash.
            let registered = plugin.register(&mut registry);
            debug_assert!(registered.is_ok(), "{registered:?}");
        }
    });
    registry
}

/// Parses, validates and builds `text`, with `seed` as the run's seed (stages whose `seed` is
/// `-1` use it).
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic (source line, caret, help).
pub fn compile(text: &str, seed: u64) -> Result<Compiled, Failure> {
    compile_with(text, &BuildContext { seed, vocab: None })
}

/// Compiles `text` with a build context (a model's vocabulary, for stages that resolve token
/// text).
///
/// # Errors
/// [`Failure::Pipeline`] with the rendered diagnostic.
pub fn compile_with(text: &str, cx: &BuildContext<'_>) -> Result<Compiled, Failure> {
    sieve_dsl::compile(text, &registry(), cx).map_err(|d| Failure::Pipeline(d.render(text)))
}
