//! The registry of stage constructors, open to stages from outside this crate.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::{Args, BuildContext, Error, ParamSpec, Params, Sampler, Stage};

/// Builds a stage from validated arguments.
pub type BuildFn =
    dyn Fn(&Args, &BuildContext<'_>) -> Result<Box<dyn Sampler>, Error> + Send + Sync;

/// What a stage tells about itself: name, one-line doc, parameter schema, whether it selects
/// the token, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct StageInfo {
    /// The name used in pipelines.
    pub name: String,
    /// One line for `sieve samplers`.
    pub doc: String,
    /// Parameters in positional order.
    pub params: Vec<ParamSpec>,
    /// Whether the stage selects the token (a pipeline that does not end in a selector gets
    /// `dist` appended).
    pub selector: bool,
    /// Other names "did you mean" suggests this stage for ([`Stage::ALIASES`]).
    pub aliases: Vec<String>,
    /// `built-in`, or the file of the plugin that defined it.
    pub origin: String,
    /// For a plugin's stage, the library that defined it (as its `export_plugin!` line
    /// names it); `None` for a built-in.
    pub plugin: Option<PluginOrigin>,
}

/// The plugin library a stage comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOrigin {
    /// The plugin's name (`export_plugin!(name = …)`).
    pub name: String,
    /// The plugin's version (`export_plugin!(version = …)`).
    pub version: String,
    /// The file it was loaded from, as given.
    pub file: String,
}

impl StageInfo {
    /// A built-in stage's description.
    pub fn builtin(name: &str, doc: &str, params: Vec<ParamSpec>) -> Self {
        StageInfo {
            name: name.to_string(),
            doc: doc.to_string(),
            params,
            selector: false,
            aliases: Vec::new(),
            origin: "built-in".to_string(),
            plugin: None,
        }
    }
    /// The description of stage type `S`, as a built-in.
    pub fn of<S: Stage>() -> Self {
        StageInfo {
            name: S::NAME.to_string(),
            doc: S::DOC.to_string(),
            params: S::Params::schema(),
            selector: S::SELECTOR,
            aliases: S::ALIASES.iter().map(|a| a.to_string()).collect(),
            origin: "built-in".to_string(),
            plugin: None,
        }
    }
    /// Marks the stage as a selector.
    pub fn selector(mut self) -> Self {
        self.selector = true;
        self
    }
    /// The parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// A registered stage: its description and its constructor.
pub struct StageEntry {
    /// Name, doc, schema, origin.
    pub info: StageInfo,
    /// The constructor.
    pub build: Box<BuildFn>,
}

impl StageEntry {
    /// An entry from a description and a constructor.
    pub fn new(
        info: StageInfo,
        build: impl Fn(&Args, &BuildContext<'_>) -> Result<Box<dyn Sampler>, Error>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        StageEntry {
            info,
            build: Box::new(build),
        }
    }
}

impl StageEntry {
    /// The entry of stage type `S` ([`StageInfo::of`]): its constructor reads
    /// [`Stage::Params`] from the arguments and calls [`Stage::new`].
    pub fn of<S: Stage>() -> Self {
        StageEntry::new(StageInfo::of::<S>(), |args, cx| {
            let params = S::Params::from_args(args)?;
            Ok(Box::new(S::new(params, cx)?))
        })
    }
}

impl core::fmt::Debug for StageEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StageEntry")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// Stage constructors by name. Built-ins and plugins register here; the DSL resolves names
/// and validates arguments against the schemas.
#[derive(Debug, Default)]
pub struct Registry {
    entries: BTreeMap<String, StageEntry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a stage.
    ///
    /// # Errors
    /// [`Error::DuplicateStage`] when the name is taken; the registry keeps the first.
    pub fn register(&mut self, entry: StageEntry) -> Result<(), Error> {
        if let Some(existing) = self.entries.get(&entry.info.name) {
            return Err(Error::DuplicateStage {
                name: entry.info.name.clone(),
                first: existing.info.origin.clone(),
                second: entry.info.origin.clone(),
            });
        }
        self.entries.insert(entry.info.name.clone(), entry);
        Ok(())
    }

    /// Adds stage type `S` ([`StageEntry::of`]).
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn add<S: Stage>(&mut self) -> Result<(), Error> {
        self.register(StageEntry::of::<S>())
    }

    /// The stage called `name`.
    pub fn get(&self, name: &str) -> Option<&StageEntry> {
        self.entries.get(name)
    }

    /// Every stage, by name.
    pub fn iter(&self) -> impl Iterator<Item = &StageEntry> {
        self.entries.values()
    }

    /// Every stage name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Builds stage `name` from validated arguments.
    ///
    /// # Errors
    /// [`Error::UnknownStage`], or whatever the constructor rejects.
    pub fn build(
        &self,
        name: &str,
        args: &Args,
        cx: &BuildContext<'_>,
    ) -> Result<Box<dyn Sampler>, Error> {
        let entry = self.get(name).ok_or_else(|| Error::UnknownStage {
            name: name.to_string(),
        })?;
        (entry.build)(args, cx)
    }
}
