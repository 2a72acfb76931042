//! Opening the files of a model directory safely: only regular files (a symlink is followed
//! to its target, which must be one), so that a FIFO cannot hang a load and `/dev/zero`
//! cannot grow one without bound; and only paths inside the directory for the names an index
//! file lists.

use std::fs::File;
use std::path::{Component, Path};

use crate::{Error, Result};

/// Opens `path` for reading after checking, without opening it, that it is a regular file
/// (so that opening never blocks on a FIFO or reads a device), and checks the opened file
/// again.
///
/// # Errors
/// [`Error::MissingFile`] when absent, [`Error::NotRegularFile`] for a directory, FIFO,
/// socket or device (also behind a symlink), [`Error::Io`].
pub fn open_regular(path: &Path) -> Result<File> {
    let io = |source: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::MissingFile {
                path: path.to_path_buf(),
            })
        }
        Err(e) => return Err(io(e)),
    };
    if !meta.is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    let file = File::open(path).map_err(io)?;
    // The path may have been replaced between the two looks.
    if !file.metadata().map_err(io)?.is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

/// Reads the whole regular file `path` (see [`open_regular`]).
///
/// # Errors
/// As [`open_regular`].
pub fn read_regular(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bytes)
}

/// Whether `name`, a file name an index lists, stays inside the directory it is joined to:
/// relative, with no `..`, root or prefix component. (A symlink inside the directory may
/// still point elsewhere, as the Hugging Face cache's snapshot directories do.)
pub fn stays_inside(name: &str) -> bool {
    let path = Path::new(name);
    !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_must_stay_inside() {
        assert!(stays_inside("model-00001-of-00002.safetensors"));
        assert!(stays_inside("shards/a.safetensors"));
        for bad in ["", "../x.safetensors", "/dev/zero", "a/../../b", "a/.."] {
            assert!(!stays_inside(bad), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_directories_are_refused_without_opening() {
        for path in ["/dev/zero", "/dev/null", "/"] {
            assert!(
                matches!(
                    open_regular(Path::new(path)),
                    Err(Error::NotRegularFile { .. })
                ),
                "{path}"
            );
        }
    }
}
