//! The models embedded in the binary, so that `sieve generate` writes English on a fresh clone
//! with no download: `models/embedded/target` (the default model) and its speculative-decoding
//! draft `models/embedded/draft`, small Llama-architecture models trained by
//! `tools/train_embedded.py` on grammar-generated stories (their README cards give the recipe
//! and the held-out perplexity).
//!
//! `--model embedded` and `--model embedded-draft` name them (a directory of that name, if
//! one exists, is taken instead). They are written once per content to a directory under the
//! system's temporary directory and opened from there like any model directory.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// One embedded model: its name on the command line and its files.
pub struct Embedded {
    /// `embedded` or `embedded-draft`.
    pub name: &'static str,
    files: [(&'static str, &'static [u8]); 4],
}

/// Includes the four files of `models/embedded/<dir>`.
macro_rules! embedded_files {
    ($dir:literal) => {
        [
            (
                "config.json",
                include_bytes!(concat!("../../../models/embedded/", $dir, "/config.json")),
            ),
            (
                "generation_config.json",
                include_bytes!(concat!(
                    "../../../models/embedded/",
                    $dir,
                    "/generation_config.json"
                )),
            ),
            (
                "tokenizer.json",
                include_bytes!(concat!(
                    "../../../models/embedded/",
                    $dir,
                    "/tokenizer.json"
                )),
            ),
            (
                "model.safetensors",
                include_bytes!(concat!(
                    "../../../models/embedded/",
                    $dir,
                    "/model.safetensors"
                )),
            ),
        ]
    };
}

/// The default model.
pub const TARGET: Embedded = Embedded {
    name: "embedded",
    files: embedded_files!("target"),
};

/// The target's draft: the same tokenizer, a much smaller network.
pub const DRAFT: Embedded = Embedded {
    name: "embedded-draft",
    files: embedded_files!("draft"),
};

/// The embedded model `path` names, unless a file or directory of that name exists.
pub fn named(path: &Path) -> Option<&'static Embedded> {
    if path.exists() {
        return None;
    }
    [&TARGET, &DRAFT]
        .into_iter()
        .find(|e| path.as_os_str() == e.name)
}

impl Embedded {
    /// Writes the model to a directory under the system's temporary directory (once per
    /// content) and returns it.
    ///
    /// # Errors
    /// When the directory or a file cannot be written.
    pub fn dir(&self) -> anyhow::Result<PathBuf> {
        let hash = self
            .files
            .iter()
            .flat_map(|(name, bytes)| name.bytes().chain(bytes.iter().copied()))
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            });
        let dir = std::env::temp_dir().join(format!("sieve-{}-{hash:016x}", self.name));
        for (name, bytes) in self.files {
            let path = dir.join(name);
            if std::fs::read(&path).ok().as_deref() != Some(bytes) {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                std::fs::write(&path, bytes)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Ok(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_backends::ModelDir;

    #[test]
    fn both_models_are_written_once_and_open() {
        for model in [&TARGET, &DRAFT] {
            let dir = model.dir().unwrap();
            assert!(dir.join("config.json").is_file());
            assert_eq!(model.dir().unwrap(), dir);
            ModelDir::open(&dir).unwrap();
        }
        assert_eq!(named(Path::new("embedded-draft")).unwrap().name, DRAFT.name);
        assert_eq!(named(Path::new("embedded")).unwrap().name, TARGET.name);
        assert!(named(Path::new("/tmp")).is_none());
        assert!(named(Path::new("no-such-model")).is_none());
    }
}
