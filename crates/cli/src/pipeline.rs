//! Turning `--sampler` text into a built pipeline, with the stages this run knows: the
//! built-ins and the stages of the plugins the command loaded ([`use_plugins`]).

use std::cell::RefCell;
use std::path::PathBuf;

use sieve_core::{BuildContext, Error, Registry};
use sieve_dsl::Compiled;
use sieve_plugin_host::Plugin;

use crate::error::{Failure, ResultExt};
use crate::plugins;

/// A loaded plugin and the names of its stages that a `--plugin` file overrides.
struct Loaded {
    plugin: Plugin,
    shadowed: Vec<String>,
}

thread_local! {
    /// The plugins of the command this thread runs (set by [`use_plugins`]).
    static PLUGINS: RefCell<Vec<Loaded>> = const { RefCell::new(Vec::new()) };
}

/// Registers `loaded`'s stages, but those a `--plugin` file overrides.
fn register(loaded: &Loaded, registry: &mut Registry) -> Result<(), Error> {
    if loaded.shadowed.is_empty() {
        return loaded.plugin.register(registry);
    }
    loaded
        .plugin
        .entries()
        .into_iter()
        .filter(|e| !loaded.shadowed.contains(&e.info.name))
        .try_for_each(|e| registry.register(e))
}

/// Loads the plugins named by `files` (`--plugin`) and by the `SIEVE_PLUGIN_PATH`
/// directories, checks that no two stages share a name (nor a plugin stage a built-in's), and
/// makes them part of [`registry`] for the commands this thread runs next. [`crate::execute`]
/// calls it before every command.
///
/// A stage that a `--plugin` file defines and a library found on `SIEVE_PLUGIN_PATH` defines
/// too is taken from the `--plugin` file, with a note on stderr (an installed copy does not
/// stand in the way of a development build); any other clash is an error.
///
/// # Errors
/// [`Failure::Usage`] naming the file (and the stage, for a clash).
pub fn use_plugins(files: &[PathBuf]) -> Result<(), Failure> {
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
    let mut check = sieve_samplers::builtin_registry();
    let mut kept = Vec::new();
    for plugin in first {
        let loaded = Loaded {
            plugin,
            shadowed: Vec::new(),
        };
        register(&loaded, &mut check).usage()?;
        kept.push(loaded);
    }
    for plugin in scanned {
        let mut shadowed = Vec::new();
        for info in plugin.stages() {
            let by = kept
                .iter()
                .find(|k| k.plugin.stages().any(|s| s.name == info.name));
            if let Some(by) = by {
                eprintln!(
                    "note: stage `{}` is defined by --plugin {} and by {} (found on {}); \
                     using the --plugin one",
                    info.name,
                    by.plugin.origin(),
                    plugin.origin(),
                    plugins::PATH_VAR,
                );
                shadowed.push(info.name.clone());
            }
        }
        let loaded = Loaded { plugin, shadowed };
        register(&loaded, &mut check).usage()?;
        kept.push(loaded);
    }
    PLUGINS.with(|p| *p.borrow_mut() = kept);
    Ok(())
}

/// Every stage `sieve` knows: the built-ins, and the stages of the plugins of
/// [`use_plugins`].
pub fn registry() -> Registry {
    let mut registry = sieve_samplers::builtin_registry();
    PLUGINS.with(|p| {
        for loaded in p.borrow().iter() {
            // `use_plugins` registered the same plugins in the same order without a clash.
            let registered = register(loaded, &mut registry);
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
