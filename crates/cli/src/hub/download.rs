//! Downloading the files a model needs into the Hugging Face cache, with the `hf-hub` crate's
//! blocking client (the layout it writes is the one transformers reads, and the one
//! [`super::cache`] reads back).
//!
//! 1. The repository's listing at the revision (`GET {endpoint}/api/models/{repo}/revision/
//!    {rev}?blobs=true`): its commit, and each file's size and hash. This first request has a
//!    bounded connect and response time ([`CONNECT_TIMEOUT`], [`RESPONSE_TIMEOUT`]), so an
//!    unreachable endpoint is an error, never a hang.
//! 2. The files [`super::files::wanted`] picks (then the shards the index names), each
//!    skipped when the snapshot already holds it with the listed size and hash.
//! 3. Each file through `hf-hub`: written to `blobs/<etag>.part`, resumed from where a
//!    previous attempt stopped (a `Range` request; [`RETRIES`] retries within the run, and
//!    the part file is kept for the next run), moved to `blobs/<etag>` and linked from
//!    `snapshots/<commit>/`; the branch's `refs/` file is written.
//! 4. Each downloaded file is checked against the listing's size and hash
//!    ([`super::verify`]); a file that does not match is deleted and refused.
//!
//! `HF_TOKEN` (else the token file `huggingface-cli login` writes) is sent as a bearer token;
//! `HF_ENDPOINT` replaces `https://huggingface.co`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use hf_hub::api::sync::{ApiBuilder, ApiRepo};
use hf_hub::api::Progress;
use hf_hub::{Cache, Repo, RepoType};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;

use super::cache::RepoCache;
use super::files::{self, INDEX};
use super::name::HubName;
use super::verify::{self, Expected};

/// The Hub's address when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The longest wait to connect to the endpoint.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest wait for the listing's response once connected.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a broken transfer is resumed within one run.
pub const RETRIES: usize = 3;

/// Where downloads come from and with which credentials.
#[derive(Debug, Clone)]
pub struct Remote {
    /// `HF_ENDPOINT`, else [`DEFAULT_ENDPOINT`] (no trailing `/`).
    pub endpoint: String,
    /// `HF_TOKEN`, else the saved login token.
    pub token: Option<String>,
}

impl Remote {
    /// The endpoint and token the environment names.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let endpoint = var("HF_ENDPOINT")
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
            .trim_end_matches('/')
            .to_string();
        let token = var("HF_TOKEN")
            .map(|t| t.trim().to_string())
            .or_else(saved_token);
        Remote { endpoint, token }
    }
}

/// The token `huggingface-cli login` saved: `HF_TOKEN_PATH`, else `token` in the Hugging
/// Face home ([`super::cache::hf_home`]).
fn saved_token() -> Option<String> {
    let path = std::env::var_os("HF_TOKEN_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(super::cache::hf_home()?.join("token")))?;
    let token = std::fs::read_to_string(path).ok()?;
    let token = token.trim();
    (!token.is_empty()).then(|| token.to_string())
}

/// The repository listing's parts that are read.
#[derive(Debug, Deserialize)]
struct Listing {
    /// The commit the revision points to.
    sha: String,
    /// The files.
    siblings: Vec<Sibling>,
}

/// One file of the listing.
#[derive(Debug, Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

/// The Git LFS part of a file's listing.
#[derive(Debug, Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

impl Sibling {
    /// The size and hash a download of this file must have.
    fn expected(&self) -> anyhow::Result<(u64, Expected)> {
        let lower = |s: &str| s.to_ascii_lowercase();
        match (&self.lfs, &self.blob_id, self.size) {
            (Some(lfs), _, _) => Ok((lfs.size, Expected::Sha256(lower(&lfs.sha256)))),
            (None, Some(blob), Some(size)) => Ok((size, Expected::GitSha1(lower(blob)))),
            _ => bail!(
                "the Hub's listing gives no size and hash for {} (asked with blobs=true)",
                self.rfilename
            ),
        }
    }
}

/// Downloads what `name` needs into the cache at `root` from `remote`; returns the snapshot
/// directory (or the GGUF file) to open. Progress is drawn on stderr when it is a terminal.
///
/// # Errors
/// An unreachable endpoint, a repository or revision the Hub does not have (or will not show
/// without a token), a file the model needs that the repository lacks, a failed transfer
/// (its part file kept, to be resumed), or a file whose size or hash differs from the
/// listing (deleted).
pub fn download(root: &Path, name: &HubName, remote: &Remote) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let api = ApiBuilder::from_cache(Cache::new(root.to_path_buf()))
        .with_endpoint(remote.endpoint.clone())
        .with_token(remote.token.clone())
        .with_retries(RETRIES)
        .with_progress(false)
        .with_user_agent("sieve", env!("CARGO_PKG_VERSION"))
        .build()
        .context("setting up the Hub client")?;
    let repo = api.repo(Repo::with_revision(
        name.repo.clone(),
        RepoType::Model,
        name.revision.clone(),
    ));
    let listing = listing(&repo, name, remote)?;
    if !super::name::is_commit(&listing.sha) {
        bail!(
            "the Hub's listing of {name} gives {:?} as its commit, not a commit hash",
            listing.sha
        );
    }
    let listed: Vec<String> = listing
        .siblings
        .iter()
        .map(|s| s.rfilename.clone())
        .collect();
    let mut wanted = files::wanted(&listed, name.file.as_deref(), &name.repo)?;
    let cache = RepoCache::new(root, name);
    let snapshot = cache.snapshot(&listing.sha);
    let mut i = 0;
    while i < wanted.len() {
        let file = wanted[i].clone();
        let sibling = listing
            .siblings
            .iter()
            .find(|s| s.rfilename == file)
            .with_context(|| format!("{} lists no file {file}", name.repo))?;
        fetch(&repo, &snapshot, sibling)
            .with_context(|| format!("downloading {file} of {name}"))?;
        if file == INDEX {
            for shard in files::shards_of_index(&snapshot.join(INDEX))? {
                if !listed.contains(&shard) {
                    bail!("{INDEX} of {name} names {shard}, which the repository does not have");
                }
                wanted.push(shard);
            }
        }
        i += 1;
    }
    if !name.is_commit() {
        write_ref(&cache, &name.revision, &listing.sha)?;
    }
    Ok(match &name.file {
        Some(file) => snapshot.join(file),
        None => snapshot,
    })
}

/// The listing of `name` at its revision, with every file's size and hash.
fn listing(repo: &ApiRepo, name: &HubName, remote: &Remote) -> anyhow::Result<Listing> {
    let response = repo
        .info_request()
        .query("blobs", "true")
        .config()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_recv_response(Some(RESPONSE_TIMEOUT))
        .timeout_recv_body(Some(RESPONSE_TIMEOUT))
        .build()
        .call();
    let endpoint = &remote.endpoint;
    let mut response = match response {
        Ok(response) => response,
        Err(ureq::Error::StatusCode(code @ (401 | 403 | 404))) => {
            let token = if remote.token.is_some() {
                "with the token given"
            } else {
                "without a token (a gated or private model needs HF_TOKEN)"
            };
            bail!(
                "{endpoint} has no model {} at revision {} that it shows {token} (HTTP {code})",
                name.repo,
                name.revision
            )
        }
        Err(ureq::Error::StatusCode(code)) => {
            bail!("{endpoint} answered HTTP {code} to the listing of {name}")
        }
        Err(e) => bail!("cannot reach {endpoint}: {e}"),
    };
    let text = response
        .body_mut()
        .read_to_string()
        .with_context(|| format!("reading {endpoint}'s listing of {name}"))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {endpoint}'s listing of {name}"))
}

/// Makes `snapshot/<file>` hold the listed file: kept when it already does, else downloaded
/// (resuming a part file) and checked; a download that fails the check is deleted.
fn fetch(repo: &ApiRepo, snapshot: &Path, sibling: &Sibling) -> anyhow::Result<()> {
    let (size, expected) = sibling.expected()?;
    let target = snapshot.join(&sibling.rfilename);
    if target.is_file() && verify::check(&target, size, &expected).is_ok() {
        return Ok(());
    }
    let path = guarded(|| repo.download_with_progress(&sibling.rfilename, Bar::new()))??;
    if path != target {
        bail!(
            "the revision moved to another commit while downloading ({} instead of {}); \
             run again",
            path.display(),
            target.display()
        );
    }
    if let Err(e) = verify::check(&path, size, &expected) {
        discard(&path);
        bail!("refused the download: {e:#}; it was deleted (run again to download it anew)");
    }
    Ok(())
}

/// Runs `f` (a call into hf-hub, which asserts on some malformed answers, such as a redirect
/// without a `Location`), turning a panic into an error with its message: bad input from a
/// server never aborts sieve.
fn guarded<T>(f: impl FnOnce() -> T) -> anyhow::Result<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        anyhow::anyhow!("the Hub's answer could not be used ({what})")
    })
}

/// Deletes a snapshot link and the blob it points to.
fn discard(link: &Path) {
    if let Ok(blob) = std::fs::canonicalize(link) {
        let _ = std::fs::remove_file(blob);
    }
    let _ = std::fs::remove_file(link);
}

/// Writes `refs/<revision>` = `commit` (as a download through hf-hub does; needed when every
/// file was already in the snapshot).
fn write_ref(cache: &RepoCache, revision: &str, commit: &str) -> anyhow::Result<()> {
    let path = cache.dir.join("refs").join(revision);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, commit).with_context(|| format!("writing {}", path.display()))
}

/// One file's progress bar on stderr (drawn only on a terminal).
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{msg:24!} {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        Bar(bar)
    }
}

impl Progress for Bar {
    fn init(&mut self, size: usize, filename: &str) {
        self.0.set_length(size as u64);
        self.0.set_position(0);
        self.0.set_message(filename.to_string());
    }

    fn update(&mut self, size: usize) {
        self.0.inc(size as u64);
    }

    fn finish(&mut self) {
        self.0.finish();
    }
}
