//! Which GGUF file a path means: the file itself, or in a directory without `config.json`
//! its only `.gguf` file, or the first shard of its only split set.

use std::path::{Path, PathBuf};

use sieve_gguf::split_name;

use crate::{Error, Result};

/// Whether `path` names a GGUF file by its extension.
pub fn is_gguf_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// The GGUF file to open in the directory `dir`, which has no `config.json`: its only
/// `.gguf` file, or the first shard of its only split set; `None` when it has none.
///
/// # Errors
/// [`Error::GgufDir`] when it holds several models; [`sieve_text::Error::Io`] when it cannot
/// be listed.
pub fn gguf_in_dir(dir: &Path) -> Result<Option<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|source| sieve_text::Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_gguf_path(p) && p.is_file())
        .collect();
    files.sort();
    // A split set counts once, by its first shard.
    let mut models: Vec<PathBuf> = Vec::new();
    for f in &files {
        match split_name(f) {
            Some((_, 1, _)) | None => models.push(f.clone()),
            Some(_) => {}
        }
    }
    let sets = files.iter().filter_map(|f| split_name(f)).count();
    if models.is_empty() && sets > 0 {
        return Err(Error::GgufDir {
            path: dir.to_path_buf(),
            message: "split shards without their first (-00001-of-…) shard".into(),
        });
    }
    match models.len() {
        0 => Ok(None),
        1 => Ok(models.pop()),
        _ => Err(Error::GgufDir {
            path: dir.to_path_buf(),
            message: format!(
                "holds {} GGUF models ({}); name the file",
                models.len(),
                models
                    .iter()
                    .filter_map(|p| p.file_name()?.to_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}
