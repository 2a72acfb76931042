//! `--model org/name[@revision][:FILE.gguf]`: a model named as on the Hugging Face Hub.
//!
//! Resolution, in this order (see [`resolve`]):
//! 1. a local file or directory of that name always wins;
//! 2. the Hugging Face cache ([`cache`]: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
//!    `~/.cache/huggingface/hub`) — a model downloaded by transformers, `huggingface-cli` or
//!    an earlier sieve opens from there with no network;
//! 3. unless `HF_HUB_OFFLINE` is set, a download of exactly the files sieve needs
//!    ([`files`], [`download`]) into that cache, checked against the Hub's sizes and hashes
//!    ([`verify`]).
//!
//! Every failure names the model, the cache path searched and how to get the model (exit
//! code 2).

pub mod cache;
pub mod download;
pub mod files;
pub mod name;
pub mod verify;

use std::path::{Path, PathBuf};

use cache::{Lookup, RepoCache};
pub use name::HubName;

use crate::error::{write_stderr, Failure};

/// Whether `HF_HUB_OFFLINE` forbids the network (`1`, `true`, `yes` or `on`, any case).
pub fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// The path `--model arg` opens: `arg` itself when it exists or is not a Hub name, else the
/// cached snapshot of the Hub model it names, downloaded first when needed and allowed.
///
/// # Errors
/// Usage (exit 2): a Hub name neither cached nor downloadable, with the name, the cache
/// searched and what to do.
pub fn resolve(arg: &Path) -> Result<PathBuf, Failure> {
    if arg.exists() {
        return Ok(arg.to_path_buf());
    }
    let Some(name) = arg.to_str().and_then(HubName::parse) else {
        return Ok(arg.to_path_buf());
    };
    let Some(root) = cache::root() else {
        return Err(Failure::usage(format!(
            "--model {name}: no such directory, and no Hugging Face cache to look in as a Hub \
             name (set HF_HUB_CACHE or HF_HOME)"
        )));
    };
    // Absolute, so that the snapshot links a download writes and the messages are plain.
    let root = std::path::absolute(&root).unwrap_or(root);
    resolve_in(&root, &name, offline(), &download::Remote::from_env())
}

/// [`resolve`] for a Hub name, in the cache at `root`, with the network allowed unless
/// `offline`.
///
/// # Errors
/// As [`resolve`].
pub fn resolve_in(
    root: &Path,
    name: &HubName,
    offline: bool,
    remote: &download::Remote,
) -> Result<PathBuf, Failure> {
    let repo = RepoCache::new(root, name);
    let why = match repo.lookup(name) {
        Lookup::Complete(path) => return Ok(path),
        Lookup::NoSnapshot(why) => why,
        Lookup::Incomplete { snapshot, missing } => format!(
            "its snapshot {} lacks {}",
            snapshot.display(),
            missing.join(", ")
        ),
    };
    let how = how_to_download(name);
    if offline {
        return Err(Failure::usage(format!(
            "--model {name}: no such directory, and not in the Hugging Face cache {} ({why}); \
             HF_HUB_OFFLINE is set, so sieve does not download it: unset it, or {how}",
            root.display()
        )));
    }
    write_stderr(&format!(
        "sieve: {name} is not in the Hugging Face cache {}; downloading it from {}\n",
        root.display(),
        remote.endpoint
    ))?;
    download::download(root, name, remote).map_err(|e| {
        Failure::usage(format!(
            "--model {name}: not in the Hugging Face cache {} ({why}), and the download \
             failed: {e:#}. Check the name and the network, or {how}",
            root.display()
        ))
    })
}

/// The command that downloads `name` into the cache by other means.
fn how_to_download(name: &HubName) -> String {
    let mut command = format!("download it with `hf download {}", name.repo);
    if let Some(file) = &name.file {
        command.push(' ');
        command.push_str(file);
    }
    if name.revision != name::DEFAULT_REVISION {
        command.push_str(" --revision ");
        command.push_str(&name.revision);
    }
    command.push('`');
    command
}
