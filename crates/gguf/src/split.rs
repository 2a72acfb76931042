//! Split models: `name-00001-of-00003.gguf` and its siblings, as llama.cpp's `gguf-split`
//! writes them. Each shard is a complete GGUF file holding some of the tensors; the first
//! holds the model's metadata, and every shard has `split.no` (0-based), `split.count` and,
//! in the first, `split.tensors.count`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::metadata::Metadata;
use crate::reader::{GgufFile, TensorInfo};
use crate::{Error, Result};

/// The key holding a shard's 0-based index.
pub const SPLIT_NO: &str = "split.no";
/// The key holding the number of shards.
pub const SPLIT_COUNT: &str = "split.count";
/// The key holding the number of tensors over all shards.
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// The parts of a shard's file name `{prefix}-{no:05}-of-{count:05}.gguf` (`no` 1-based), or
/// `None` when the name is not a shard's.
pub fn split_name(path: &Path) -> Option<(String, u32, u32)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(count) {
        return None;
    }
    Some((prefix.to_string(), no.parse().ok()?, count.parse().ok()?))
}

/// The file name of shard `no` (1-based) of `count`.
pub fn shard_name(prefix: &str, no: u32, count: u32) -> String {
    format!("{prefix}-{no:05}-of-{count:05}.gguf")
}

/// A model in one GGUF file or in the shards of a split: the first file's metadata and the
/// tensors of all of them, by name.
#[derive(Debug, Clone)]
pub struct GgufModel {
    shards: Vec<GgufFile>,
    /// Tensor name to (shard, index in that shard's tensors).
    by_name: HashMap<String, (usize, usize)>,
}

impl GgufModel {
    /// Opens `path`, and when it is the first shard of a split model (by `split.count` or
    /// its name), every other shard in the same directory.
    ///
    /// # Errors
    /// Those of [`GgufFile::open`] for any shard; [`Error::Split`] when `path` is a later
    /// shard, when a shard is missing or its `split.*` keys disagree, or when a tensor name
    /// appears in two shards or the tensor count differs from `split.tensors.count`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let first = GgufFile::open(path)?;
        let meta = first.metadata();
        let count = meta.get_u32(SPLIT_COUNT)?;
        let named = split_name(path);
        let count = match (count, &named) {
            (Some(c), _) => c,
            (None, Some((_, _, c))) if *c > 1 => {
                return Err(split_err(
                    path,
                    format!("the name says {c} shards but `{SPLIT_COUNT}` is absent"),
                ))
            }
            (None, _) => 1,
        };
        if count <= 1 {
            return GgufModel::from_shards(vec![first]);
        }
        let no = meta.get_u32(SPLIT_NO)?.unwrap_or(0);
        let Some((prefix, _, _)) = named else {
            return Err(split_err(
                path,
                format!(
                    "shard {} of {count}, but the name is not `PREFIX-0000N-of-{count:05}.gguf`",
                    no + 1
                ),
            ));
        };
        if no != 0 {
            return Err(split_err(
                path,
                format!(
                    "this is shard {} of {count}; open the first one, {}",
                    no + 1,
                    shard_name(&prefix, 1, count)
                ),
            ));
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut shards = vec![first];
        for i in 1..count {
            let shard_path: PathBuf = dir.join(shard_name(&prefix, i + 1, count));
            if !shard_path.exists() {
                return Err(split_err(
                    &shard_path,
                    format!("shard {} of {count} is missing", i + 1),
                ));
            }
            let shard = GgufFile::open(&shard_path)?;
            let m = shard.metadata();
            if m.get_u32(SPLIT_NO)? != Some(i) || m.get_u32(SPLIT_COUNT)? != Some(count) {
                return Err(split_err(
                    &shard_path,
                    format!(
                        "`{SPLIT_NO}` {:?} and `{SPLIT_COUNT}` {:?}, expected {i} and {count}",
                        m.get_u32(SPLIT_NO)?,
                        m.get_u32(SPLIT_COUNT)?
                    ),
                ));
            }
            shards.push(shard);
        }
        GgufModel::from_shards(shards)
    }

    /// A model from shards already opened, the first holding the metadata.
    ///
    /// # Errors
    /// [`Error::Split`] for a tensor name in two shards, or a total other than the first
    /// shard's `split.tensors.count`.
    pub fn from_shards(shards: Vec<GgufFile>) -> Result<Self> {
        let mut by_name = HashMap::new();
        for (s, shard) in shards.iter().enumerate() {
            for (i, t) in shard.tensors().iter().enumerate() {
                if let Some((other, _)) = by_name.insert(t.name.clone(), (s, i)) {
                    return Err(split_err(
                        shard.path(),
                        format!(
                            "tensor `{}` is also in {}",
                            t.name,
                            shards[other].path().display()
                        ),
                    ));
                }
            }
        }
        if let Some(first) = shards.first() {
            if let Some(n) = first.metadata().get_u64(SPLIT_TENSORS_COUNT)? {
                if n != by_name.len() as u64 && shards.len() > 1 {
                    return Err(split_err(
                        first.path(),
                        format!(
                            "`{SPLIT_TENSORS_COUNT}` is {n} but the shards hold {} tensors",
                            by_name.len()
                        ),
                    ));
                }
            }
        }
        Ok(GgufModel { shards, by_name })
    }

    /// The files, the first first.
    pub fn shards(&self) -> &[GgufFile] {
        &self.shards
    }

    /// The first file.
    pub fn first(&self) -> &GgufFile {
        &self.shards[0]
    }

    /// The model's metadata (the first file's).
    pub fn metadata(&self) -> &Metadata {
        self.first().metadata()
    }

    /// The tensor `name` and the file holding it.
    pub fn tensor(&self, name: &str) -> Option<(&GgufFile, &TensorInfo)> {
        let &(s, i) = self.by_name.get(name)?;
        let shard = &self.shards[s];
        Some((shard, &shard.tensors()[i]))
    }

    /// Every tensor with its file, shard by shard in file order.
    pub fn tensors(&self) -> impl Iterator<Item = (&GgufFile, &TensorInfo)> {
        self.shards
            .iter()
            .flat_map(|s| s.tensors().iter().map(move |t| (s, t)))
    }

    /// Bytes of tensor data over all shards.
    pub fn data_bytes(&self) -> u64 {
        self.tensors().map(|(_, t)| t.size).sum()
    }
}

fn split_err(path: &Path, message: String) -> Error {
    Error::Split {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names() {
        assert_eq!(
            split_name(Path::new("/m/Qwen-7B-Q4_K_M-00002-of-00003.gguf")),
            Some(("Qwen-7B-Q4_K_M".to_string(), 2, 3))
        );
        assert_eq!(split_name(Path::new("model.gguf")), None);
        assert_eq!(split_name(Path::new("m-2-of-3.gguf")), None);
        assert_eq!(shard_name("m", 1, 2), "m-00001-of-00002.gguf");
    }
}
