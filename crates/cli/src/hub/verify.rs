//! Checking a downloaded file against what the Hub says of it: its size, and its hash — the
//! SHA-256 of a file stored with Git LFS (weights, large tokenizers), else git's object id
//! (SHA-1 of `blob <size>\0` and the bytes), which is what the Hub lists as `blobId` and
//! sends as the file's ETag.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context as _};
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// The hash a file must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// SHA-256 of the bytes, lowercase hex (Git LFS files).
    Sha256(String),
    /// Git's blob id, lowercase hex (files stored in git itself).
    GitSha1(String),
}

/// Checks that the file at `path` is `size` bytes long and has the hash `expected`.
///
/// # Errors
/// An unreadable file, another size, or another hash (both hashes named).
pub fn check(path: &Path, size: u64, expected: &Expected) -> anyhow::Result<()> {
    let found = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if found != size {
        bail!("it is {found} bytes long, the Hub lists {size}");
    }
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let (kind, want, got) = match expected {
        Expected::Sha256(want) => ("SHA-256", want, hex(&digest(Sha256::new(), file)?)),
        Expected::GitSha1(want) => {
            let mut hasher = Sha1::new();
            hasher.update(format!("blob {size}\0").as_bytes());
            ("git SHA-1", want, hex(&digest(hasher, file)?))
        }
    };
    if &got != want {
        bail!("its {kind} is {got}, the Hub lists {want}");
    }
    Ok(())
}

/// Feeds `file` through `hasher`.
fn digest<D: Digest>(mut hasher: D, mut file: std::fs::File) -> anyhow::Result<Vec<u8>> {
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().to_vec())
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_both_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "hello\n").unwrap();
        // `printf 'hello\n' | sha256sum` and `git hash-object`.
        let sha256 = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        let git = "ce013625030ba8dba906f756967f9e9ca394464a";
        check(&path, 6, &Expected::Sha256(sha256.into())).unwrap();
        check(&path, 6, &Expected::GitSha1(git.into())).unwrap();
        let err = check(&path, 7, &Expected::GitSha1(git.into())).unwrap_err();
        assert_eq!(err.to_string(), "it is 6 bytes long, the Hub lists 7");
        let err = check(&path, 6, &Expected::Sha256(git.into())).unwrap_err();
        assert!(
            err.to_string().starts_with("its SHA-256 is 5891b5"),
            "{err}"
        );
    }
}
