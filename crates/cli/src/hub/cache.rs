//! The Hugging Face cache as transformers, `huggingface-cli`/`hf` and the `hf-hub` crate lay
//! it out, read without the network:
//!
//! ```text
//! $HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub)
//! └── models--org--name/
//!     ├── refs/main                 the commit the branch or tag pointed at when downloaded
//!     ├── snapshots/<commit>/       the files of that commit, as links into blobs/
//!     └── blobs/<etag>              the files' bytes, named by their hash
//! ```

use std::path::{Path, PathBuf};

use super::files::{self, Need};
use super::name::HubName;

/// The cache root the environment names, as huggingface_hub reads it: `HF_HUB_CACHE` (or
/// its old name `HUGGINGFACE_HUB_CACHE`), else `HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (`None` when none is
/// set and there is no home directory).
pub fn root() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("HF_HUB_CACHE").or_else(|| set("HUGGINGFACE_HUB_CACHE")) {
        return Some(PathBuf::from(dir));
    }
    Some(hf_home()?.join("hub"))
}

/// `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`: where the
/// cache and the saved login token live.
pub fn hf_home() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(home) = set("HF_HOME") {
        return Some(PathBuf::from(home));
    }
    let cache = match set("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(set("HOME")?).join(".cache"),
    };
    Some(cache.join("huggingface"))
}

/// Where one repository's files are, or would be, in the cache at `root`.
#[derive(Debug, Clone)]
pub struct RepoCache {
    /// `root/models--org--name`.
    pub dir: PathBuf,
}

/// What the cache holds for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A snapshot with every file the model needs: the directory (or the GGUF file) to open.
    Complete(PathBuf),
    /// No snapshot for the revision: the repository folder or its ref is missing, or the ref
    /// names a commit whose snapshot is gone (a stale ref). The text says which.
    NoSnapshot(String),
    /// A snapshot lacking files (named, relative to it).
    Incomplete {
        /// The snapshot directory.
        snapshot: PathBuf,
        /// The files it lacks (a missing shard, a missing config...).
        missing: Vec<String>,
    },
}

impl RepoCache {
    /// The repository of `name` in the cache at `root`.
    pub fn new(root: &Path, name: &HubName) -> Self {
        RepoCache {
            dir: root.join(name.folder()),
        }
    }

    /// The snapshot directory of `commit`.
    pub fn snapshot(&self, commit: &str) -> PathBuf {
        self.dir.join("snapshots").join(commit)
    }

    /// The commit the revision of `name` points to: the revision itself when it is a
    /// commit, else the content of `refs/<revision>`.
    ///
    /// # Errors
    /// Text saying what is missing or malformed.
    pub fn commit(&self, name: &HubName) -> Result<String, String> {
        if name.is_commit() {
            return Ok(name.revision.clone());
        }
        if !self.dir.is_dir() {
            return Err(format!("{} does not exist", self.dir.display()));
        }
        let reference = self.dir.join("refs").join(&name.revision);
        let text = std::fs::read_to_string(&reference)
            .map_err(|e| format!("cannot read {}: {e}", reference.display()))?;
        let commit = text.trim();
        if !super::name::is_commit(commit) {
            return Err(format!(
                "{} does not hold a commit hash (found {:?})",
                reference.display(),
                truncate(commit, 60)
            ));
        }
        Ok(commit.to_string())
    }

    /// Looks `name` up: its snapshot, and whether it holds what the model needs.
    pub fn lookup(&self, name: &HubName) -> Lookup {
        let commit = match self.commit(name) {
            Ok(commit) => commit,
            Err(why) => return Lookup::NoSnapshot(why),
        };
        let snapshot = self.snapshot(&commit);
        if !snapshot.is_dir() {
            return Lookup::NoSnapshot(format!(
                "the revision {} points to commit {commit}, whose snapshot {} is missing \
                 (a stale ref)",
                name.revision,
                snapshot.display()
            ));
        }
        let missing = missing_files(&snapshot, name);
        if missing.is_empty() {
            let target = match &name.file {
                Some(file) => snapshot.join(file),
                None => snapshot,
            };
            Lookup::Complete(target)
        } else {
            Lookup::Incomplete { snapshot, missing }
        }
    }
}

/// The files `name` needs that `snapshot` lacks. A file counts as present when it opens as
/// a regular file (a link into `blobs/` whose blob is gone does not).
pub fn missing_files(snapshot: &Path, name: &HubName) -> Vec<String> {
    let present = |file: &str| snapshot.join(file).is_file();
    let mut missing = Vec::new();
    let needs = match &name.file {
        Some(file) => vec![Need::Required(file.clone())],
        None => files::required_in_snapshot(snapshot),
    };
    for need in needs {
        match need {
            Need::Required(file) if !present(&file) => missing.push(file),
            Need::Required(_) => {}
            Need::Broken(why) => missing.push(why),
        }
    }
    missing
}

/// `text`, cut to at most `max` characters.
fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn name(text: &str) -> HubName {
        HubName::parse(text).unwrap()
    }

    #[test]
    fn refs_name_snapshots() {
        let root = tempfile::tempdir().unwrap();
        let n = name("org/m");
        let cache = RepoCache::new(root.path(), &n);
        assert!(matches!(cache.lookup(&n), Lookup::NoSnapshot(w) if w.contains("does not exist")));
        std::fs::create_dir_all(cache.dir.join("refs")).unwrap();
        std::fs::write(cache.dir.join("refs/main"), "not a hash").unwrap();
        assert!(matches!(cache.lookup(&n), Lookup::NoSnapshot(w) if w.contains("commit hash")));
        std::fs::write(cache.dir.join("refs/main"), format!("{SHA}\n")).unwrap();
        assert_eq!(cache.commit(&n).unwrap(), SHA);
        assert!(matches!(cache.lookup(&n), Lookup::NoSnapshot(w) if w.contains("stale ref")));
        let snapshot = cache.snapshot(SHA);
        std::fs::create_dir_all(&snapshot).unwrap();
        let Lookup::Incomplete { missing, .. } = cache.lookup(&n) else {
            panic!("not incomplete")
        };
        assert_eq!(
            missing,
            ["config.json", "tokenizer.json", "model.safetensors"]
        );
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::write(snapshot.join(file), "x").unwrap();
        }
        assert_eq!(cache.lookup(&n), Lookup::Complete(snapshot.clone()));
        let by_commit = name(&format!("org/m@{SHA}"));
        assert_eq!(cache.lookup(&by_commit), Lookup::Complete(snapshot.clone()));
        let gguf = name("org/m:m.gguf");
        assert!(
            matches!(cache.lookup(&gguf), Lookup::Incomplete { missing, .. } if missing == ["m.gguf"])
        );
        std::fs::write(snapshot.join("m.gguf"), "x").unwrap();
        assert_eq!(
            cache.lookup(&gguf),
            Lookup::Complete(snapshot.join("m.gguf"))
        );
    }
}
