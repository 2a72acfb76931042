//! Plugin discovery: the libraries named by `--plugin` and those in the directories listed by
//! `SIEVE_PLUGIN_PATH`, loaded at most once per process and never unloaded.
//!
//! - `--plugin PATH` (repeatable) names a file; it is loaded whatever its name.
//! - `SIEVE_PLUGIN_PATH` lists directories, separated like `PATH` (`:` on Unix, `;` on
//!   Windows); every file in them with the platform's library extension (`.so`, `.dylib`,
//!   `.dll`) is loaded, in name order. Empty entries are skipped; a directory that cannot be
//!   read is an error (a typo should not silently drop a plugin).
//! - The same file reached twice (both ways, or through a link) is loaded once.
//! - A stage defined both by a `--plugin` file and by a library found on `SIEVE_PLUGIN_PATH`
//!   is taken from the `--plugin` file, with a note on stderr (so a development build shadows
//!   an installed copy); two `--plugin` files, or two path libraries, defining one stage are
//!   an error ([`crate::pipeline::registry`]).
//!
//! Only files the user names this way are ever loaded.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use anyhow::{Context as _, Result};
use clap::Args;
use sieve_plugin_host::Plugin;

/// `--plugin PATH`, on every command that builds a pipeline.
#[derive(Debug, Clone, Default, Args)]
pub struct PluginArgs {
    /// Load the sampler stages of this plugin library (repeatable); the libraries in the
    /// directories of SIEVE_PLUGIN_PATH (separated by ':') are loaded too
    #[arg(long = "plugin", value_name = "PATH")]
    pub files: Vec<PathBuf>,
}

/// The environment variable listing plugin directories.
pub const PATH_VAR: &str = "SIEVE_PLUGIN_PATH";

/// The plugin files to load: `flags` in order, then the library files of each directory of
/// `path_var` (the value of [`PATH_VAR`]), each file once.
///
/// # Errors
/// A directory of `path_var` that cannot be read, naming it.
pub fn discover(flags: &[PathBuf], path_var: Option<&OsStr>) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = flags.to_vec();
    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        if dir.as_os_str().is_empty() {
            continue;
        }
        let mut found = Vec::new();
        let entries = std::fs::read_dir(&dir)
            .with_context(|| format!("{PATH_VAR}: directory {}", dir.display()))?;
        for entry in entries {
            let path = entry
                .with_context(|| format!("{PATH_VAR}: directory {}", dir.display()))?
                .path();
            if is_library(&path) {
                found.push(path);
            }
        }
        found.sort();
        files.extend(found);
    }
    let mut seen = Vec::new();
    files.retain(|f| {
        let key = canonical(f);
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    Ok(files)
}

/// The canonical form of `file` (itself when it cannot be resolved), to tell whether two
/// paths name one file.
pub fn canonical(file: &Path) -> PathBuf {
    std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())
}

/// Whether `path` is a file with the platform's shared-library extension.
fn is_library(path: &Path) -> bool {
    path.extension() == Some(OsStr::new(std::env::consts::DLL_EXTENSION)) && path.is_file()
}

/// The plugins loaded so far in this process, by canonical path.
fn loaded() -> &'static Mutex<HashMap<PathBuf, Plugin>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Plugin>>> = OnceLock::new();
    LOADED.get_or_init(Mutex::default)
}

/// Loads `file` (or returns it, if this process loaded it before).
///
/// # Errors
/// The [`sieve_plugin_host::LoadError`] naming the file.
pub fn load(file: &Path) -> Result<Plugin> {
    let key = canonical(file);
    let mut cache = loaded().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(plugin) = cache.get(&key) {
        return Ok(plugin.clone());
    }
    if !file.exists() {
        anyhow::bail!("plugin {}: no such file", file.display());
    }
    // SAFETY: the user named this file (with --plugin or SIEVE_PLUGIN_PATH) to be loaded as
    // a sieve plugin: trusting it is the user's decision, as for any program they run. The
    // version and descriptor checks catch files that are not plugins of this ABI.
    let plugin = unsafe { Plugin::load(file) }?;
    cache.insert(key, plugin.clone());
    Ok(plugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, b"").unwrap();
        p
    }

    #[test]
    fn flags_then_library_files_of_each_directory_in_name_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ext = std::env::consts::DLL_EXTENSION;
        let z = touch(a.path(), &format!("z.{ext}"));
        let y = touch(a.path(), &format!("y.{ext}"));
        touch(a.path(), "notes.txt");
        std::fs::create_dir(a.path().join(format!("dir.{ext}"))).unwrap();
        let x = touch(b.path(), &format!("x.{ext}"));
        let flag = PathBuf::from("elsewhere/lib.so");
        let var = std::env::join_paths([a.path(), Path::new(""), b.path()]).unwrap();
        let files = discover(std::slice::from_ref(&flag), Some(&var)).unwrap();
        assert_eq!(files, [flag, y, z, x]);
    }

    #[test]
    fn a_file_named_twice_is_loaded_once() {
        let a = tempfile::tempdir().unwrap();
        let ext = std::env::consts::DLL_EXTENSION;
        let f = touch(a.path(), &format!("p.{ext}"));
        let var = a.path().as_os_str().to_owned();
        let files = discover(&[f.clone(), f.clone()], Some(&var)).unwrap();
        assert_eq!(files, [f]);
    }

    #[test]
    fn an_unreadable_directory_is_an_error_naming_it() {
        let err = discover(&[], Some(OsStr::new("/no/such/dir"))).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("SIEVE_PLUGIN_PATH: directory /no/such/dir: "),
            "{err:#}"
        );
        assert_eq!(discover(&[], None).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let err = load(Path::new("/no/such/libx.so")).unwrap_err();
        assert_eq!(err.to_string(), "plugin /no/such/libx.so: no such file");
    }
}
