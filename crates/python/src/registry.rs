//! The stages this process knows: the built-ins plus the plugins loaded with
//! `sieve.load_plugin`, with the same loader and refusals as the CLI's `--plugin` (a file that
//! is not a library, has no sieve entry, speaks another ABI, or defines a stage that already
//! exists is refused and changes nothing). A file is loaded at most once per process.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sieve_core::Registry;
use sieve_plugin_host::Plugin;

use crate::error::Error;

/// The loaded plugins (by canonical path, in load order) and the registry they make.
struct State {
    plugins: Vec<(PathBuf, Plugin)>,
    registry: Arc<Registry>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Runs `f` on the process's state, made on first use.
fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(|| State {
        plugins: Vec::new(),
        registry: Arc::new(sieve_samplers::builtin_registry()),
    });
    f(state)
}

/// The registry as it is now: pipelines built later keep the one they were built with.
pub fn current() -> Arc<Registry> {
    with_state(|s| Arc::clone(&s.registry))
}

/// Loads the plugin library at `path` and registers its stages; returns the plugin (the same
/// one again for a file loaded before).
///
/// # Errors
/// [`Error::Plugin`]: no such file, the loader's refusal, or a stage name already taken.
pub fn load(path: &Path) -> Result<Plugin, Error> {
    let key = std::fs::canonicalize(path)
        .map_err(|e| Error::Plugin(format!("plugin {}: {e}", path.display())))?;
    with_state(|state| {
        if let Some((_, plugin)) = state.plugins.iter().find(|(k, _)| *k == key) {
            return Ok(plugin.clone());
        }
        if !key.is_file() {
            return Err(Error::Plugin(format!(
                "plugin {}: not a regular file",
                path.display()
            )));
        }
        // SAFETY: the caller named this file to be loaded as a sieve plugin
        // (`sieve.load_plugin`): trusting it is their decision, as for any native code they
        // import. The ABI version and descriptor checks catch files that are not plugins.
        let plugin = unsafe { Plugin::load(path) }.map_err(|e| Error::Plugin(e.to_string()))?;
        let mut registry = sieve_samplers::builtin_registry();
        for (_, earlier) in &state.plugins {
            earlier
                .register(&mut registry)
                .map_err(|e| Error::Internal(format!("re-registering a plugin: {e}")))?;
        }
        plugin
            .register(&mut registry)
            .map_err(|e| Error::Plugin(format!("plugin {}: {e}", path.display())))?;
        state.plugins.push((key, plugin.clone()));
        state.registry = Arc::new(registry);
        Ok(plugin)
    })
}
