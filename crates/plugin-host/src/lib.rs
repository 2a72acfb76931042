//! # sieve-plugin-host
//!
//! Loading sieve sampler plugins (libraries made with `sieve_plugin::export_plugin!`) and
//! registering their stages; used by the command line only.
//!
//! [`Plugin::load`] opens a library with `libloading` and **never closes it** (the library
//! is leaked for the life of the process, so no stage, state or function pointer can outlive
//! its code; unloading Rust libraries is not reliably possible anyway). It then:
//!
//! 1. reads `sieve_plugin_abi_version` and refuses any other version than [`ABI_VERSION`]
//!    *before reading anything else* ("built for sieve plugin ABI vN, this sieve speaks vM");
//! 2. calls `sieve_plugin_entry` and reads the descriptor, checking every `struct_size`,
//!    string, name, parameter schema and default with [`sieve_plugin::descriptor::describe`]
//!    (the same check `sieve_plugin::testing::check_descriptor` runs in a plugin's tests);
//! 3. wraps each stage as a [`StageEntry`] whose [`StageInfo::origin`] is the file path and
//!    whose [`StageInfo::plugin`] names the library (name, version, file).
//!
//! Every fault is a [`LoadError`] naming the file; faults while building or running a stage
//! are [`Error`]s naming the stage and the file. Nothing aborts the host.

#![warn(missing_docs)]

mod descriptor;
mod report;
mod sampler;
#[cfg(test)]
mod tests;

use std::format;
use std::path::Path;
use std::string::{String, ToString};
use std::sync::Arc;
use std::vec::Vec;

use descriptor::StageRef;
use report::Report;
pub use sieve_plugin::descriptor::DescriptorError;
use sieve_plugin::descriptor::{describe, Described};

use sieve_core::{Error, PluginOrigin, Registry, StageEntry, StageInfo};
use sieve_plugin::abi::{AbiVersionFn, EntryFn, ABI_VERSION, ABI_VERSION_SYMBOL, ENTRY_SYMBOL};

/// Why a plugin file could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("plugin {path}: {reason}")]
pub struct LoadError {
    /// The file, as given.
    pub path: String,
    /// What is wrong with it.
    pub reason: LoadFailure,
}

/// What is wrong with a plugin file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadFailure {
    /// The file could not be opened as a shared library.
    #[error("not a loadable library: {0}")]
    NotALibrary(String),
    /// A required symbol is missing.
    #[error("no `{symbol}` symbol: not a sieve plugin (plugins export it with `sieve_plugin::export_plugin!`)")]
    MissingSymbol {
        /// The symbol's name.
        symbol: &'static str,
    },
    /// The plugin was built for another ABI version.
    #[error("built for sieve plugin ABI v{found}, this sieve speaks v{expected}; rebuild the plugin against this sieve-plugin")]
    AbiMismatch {
        /// The plugin's version.
        found: u32,
        /// This build's version ([`ABI_VERSION`]).
        expected: u32,
    },
    /// The entry function returned no descriptor.
    #[error("its entry function failed: {0}")]
    Entry(String),
    /// The descriptor is malformed.
    #[error("bad descriptor: {0}")]
    Descriptor(Box<DescriptorError>),
}

/// A loaded plugin: its name, version, file, and stages.
#[derive(Debug, Clone)]
pub struct Plugin {
    origin: Arc<str>,
    name: String,
    version: String,
    stages: Vec<(StageInfo, StageRef)>,
}

impl Plugin {
    /// Loads the plugin library at `path` and reads its descriptor. The library stays loaded
    /// until the process ends, whatever the outcome.
    ///
    /// # Errors
    /// A [`LoadError`] naming `path`: not a library, a missing symbol, another ABI version, an
    /// entry that fails or a malformed descriptor.
    ///
    /// # Safety
    /// Loading a library runs its initialization code, and its exported functions are trusted
    /// to follow the plugin ABI (the version check and the descriptor checks catch honest
    /// mistakes, not a library that lies): only load files you trust, like any native code.
    pub unsafe fn load(path: &Path) -> Result<Plugin, LoadError> {
        let origin = path.display().to_string();
        let fail = |reason| LoadError {
            path: origin.clone(),
            reason,
        };
        // SAFETY: the caller trusts the file (see `# Safety`).
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| fail(LoadFailure::NotALibrary(e.to_string())))?;
        // The library is never closed: even a refused one may have run code that left
        // something behind (thread-local destructors, a panic hook).
        let library: &'static libloading::Library =
            std::boxed::Box::leak(std::boxed::Box::new(library));
        // SAFETY: the symbol has the ABI-version signature (the ABI contract).
        let version = unsafe { library.get::<AbiVersionFn>(ABI_VERSION_SYMBOL) }
            .map(|s| *s)
            .map_err(|_| {
                fail(LoadFailure::MissingSymbol {
                    symbol: "sieve_plugin_abi_version",
                })
            })?;
        // The entry symbol is resolved only once `open` has checked the version.
        let entry = || {
            // SAFETY: the symbol has the entry signature (the ABI contract).
            unsafe { library.get::<EntryFn>(ENTRY_SYMBOL) }
                .map(|s| *s)
                .map_err(|_| LoadFailure::MissingSymbol {
                    symbol: "sieve_plugin_entry",
                })
        };
        // SAFETY: both functions come from a library that stays loaded.
        unsafe { Plugin::open(&origin, version, entry) }
    }

    /// A plugin from its two exported functions, for plugins linked into the host (and
    /// tests); `origin` names it in stage origins and errors. [`Plugin::load`] ends here.
    ///
    /// # Errors
    /// As [`Plugin::load`], except the library errors.
    ///
    /// # Safety
    /// The functions must follow the plugin ABI and stay callable, with the descriptor
    /// `entry` returns, for the rest of the process.
    pub unsafe fn from_symbols(
        origin: &str,
        abi_version: AbiVersionFn,
        entry: EntryFn,
    ) -> Result<Plugin, LoadError> {
        // SAFETY: the caller's promise.
        unsafe { Plugin::open(origin, abi_version, || Ok(entry)) }
    }

    /// The one place the ABI version is checked: `abi_version` is called first and any other
    /// version than [`ABI_VERSION`] refused before `entry` is even resolved; then the
    /// descriptor is read and checked.
    ///
    /// # Safety
    /// As [`Plugin::from_symbols`].
    unsafe fn open(
        origin: &str,
        abi_version: AbiVersionFn,
        entry: impl FnOnce() -> Result<EntryFn, LoadFailure>,
    ) -> Result<Plugin, LoadError> {
        let fail = |reason| LoadError {
            path: origin.to_string(),
            reason,
        };
        // SAFETY: the caller's promise.
        let found = unsafe { abi_version() };
        if found != ABI_VERSION {
            return Err(fail(LoadFailure::AbiMismatch {
                found,
                expected: ABI_VERSION,
            }));
        }
        let entry = entry().map_err(fail)?;
        let mut report = Report::default();
        let sink = report.sink();
        // SAFETY: the caller's promise; `sink` points at `report`, untouched during the call.
        let descriptor = unsafe { entry(&sink) };
        if descriptor.is_null() {
            return Err(fail(LoadFailure::Entry(report.message(-1))));
        }
        // SAFETY: a non-null descriptor from the entry function lives for the process
        // (the caller's promise).
        let described: Described<'static> = unsafe { describe(descriptor, origin) }
            .map_err(|e| fail(LoadFailure::Descriptor(Box::new(e))))?;
        let library = PluginOrigin {
            name: described.name.clone(),
            version: described.version.clone(),
            file: origin.to_string(),
        };
        let stages = described
            .stages
            .into_iter()
            .map(|(mut info, stage)| {
                info.plugin = Some(library.clone());
                (info, StageRef(stage))
            })
            .collect();
        Ok(Plugin {
            origin: origin.into(),
            name: described.name,
            version: described.version,
            stages,
        })
    }

    /// The file the plugin came from (as given to [`Plugin::load`]).
    pub fn origin(&self) -> &str {
        &self.origin
    }
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The plugin's version.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// Its stages' descriptions.
    pub fn stages(&self) -> impl Iterator<Item = &StageInfo> {
        self.stages.iter().map(|(info, _)| info)
    }

    /// One registry entry per stage.
    pub fn entries(&self) -> Vec<StageEntry> {
        self.stages
            .iter()
            .map(|(info, stage)| {
                let (stage, name, origin) = (*stage, info.name.clone(), Arc::clone(&self.origin));
                StageEntry::new(info.clone(), move |args, cx| {
                    sampler::build(stage, &name, &origin, args, cx)
                })
            })
            .collect()
    }

    /// Registers every stage, or none: a stage whose name is taken (by a built-in or another
    /// plugin) refuses the whole plugin.
    ///
    /// # Errors
    /// [`Error::DuplicateStage`] naming the stage and both origins.
    pub fn register(&self, registry: &mut Registry) -> Result<(), Error> {
        for (info, _) in &self.stages {
            if let Some(existing) = registry.get(&info.name) {
                return Err(Error::DuplicateStage {
                    name: info.name.clone(),
                    first: existing.info.origin.clone(),
                    second: format!("{}", self.origin),
                });
            }
        }
        self.entries()
            .into_iter()
            .try_for_each(|entry| registry.register(entry))
    }
}
