//! What the Hub tests share: a repository made of a fixture model's files, a Hugging Face
//! cache laid out by hand the way the Hub clients write it, a small HTTP server on 127.0.0.1
//! that answers the Hub's listing and file endpoints for one repository, and running `sieve`
//! with a controlled Hugging Face environment.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use sha1::Sha1;
use sha2::{Digest, Sha256};

/// The commit every test repository is at.
pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// Every Hugging Face variable, removed before a test sets its own.
const HF_VARS: [&str; 8] = [
    "HF_HUB_CACHE",
    "HF_HOME",
    "HF_HUB_OFFLINE",
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HF_TOKEN_PATH",
    "HUGGINGFACE_HUB_CACHE",
    "XDG_CACHE_HOME",
];

/// The repository's folder of `tests/fixtures/models/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "tests",
        "fixtures",
        "models",
        name,
    ]
    .iter()
    .collect()
}

/// One file of a test repository.
#[derive(Clone)]
pub struct File {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Whether it is stored with Git LFS (listed with a SHA-256, sent with X-Linked-Etag).
    pub lfs: bool,
}

impl File {
    /// The hash the Hub names it by: SHA-256 for LFS files, git's blob id for the others.
    pub fn etag(&self) -> String {
        if self.lfs {
            hex(&Sha256::digest(&self.bytes))
        } else {
            let mut h = Sha1::new();
            h.update(format!("blob {}\0", self.bytes.len()).as_bytes());
            h.update(&self.bytes);
            hex(&h.finalize())
        }
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A repository: its files by name.
pub type Repo = BTreeMap<String, File>;

/// The files of a fixture model directory, the `.safetensors` ones stored with LFS, plus a
/// README and a `.gitattributes` that sieve must not download.
pub fn repo_of(fixture_name: &str) -> Repo {
    let mut repo = Repo::new();
    for entry in std::fs::read_dir(fixture(fixture_name)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let lfs = name.ends_with(".safetensors") || name.ends_with(".f32");
        repo.insert(
            name,
            File {
                bytes: std::fs::read(&path).unwrap(),
                lfs,
            },
        );
    }
    for (name, text) in [
        ("README.md", "# test\n"),
        (".gitattributes", "*.safetensors lfs\n"),
    ] {
        repo.insert(
            name.to_string(),
            File {
                bytes: text.as_bytes().to_vec(),
                lfs: false,
            },
        );
    }
    repo
}

/// Lays `files` of `repo` out in the cache at `root` as the Hub clients do: blobs named by
/// hash, `snapshots/COMMIT/<file>` relative links to them, `refs/main`. Returns the
/// repository's folder.
pub fn lay_out_cache(root: &Path, repo_id: &str, repo: &Repo, files: &[&str]) -> PathBuf {
    let dir = root.join(format!("models--{}", repo_id.replace('/', "--")));
    let snapshot = dir.join("snapshots").join(COMMIT);
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    for name in files {
        let file = &repo[*name];
        let blob = dir.join("blobs").join(file.etag());
        std::fs::write(&blob, &file.bytes).unwrap();
        std::os::unix::fs::symlink(
            Path::new("../../blobs").join(file.etag()),
            snapshot.join(name),
        )
        .unwrap();
    }
    std::fs::write(dir.join("refs").join("main"), COMMIT).unwrap();
    dir
}

/// One run of `sieve`.
pub struct Run {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit code.
    pub code: i32,
}

/// Runs `sieve args` in `cwd` with every Hugging Face variable removed, then `env` set.
pub fn sieve_env(args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>) -> Run {
    sieve_input(args, env, cwd, "")
}

/// [`sieve_env`] with `input` on stdin (a pipe).
pub fn sieve_input(args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>, input: &str) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sieve"));
    cmd.args(args).env_remove("SIEVE_PLUGIN_PATH");
    for var in HF_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run sieve");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("run sieve");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().expect("sieve exited normally"),
    }
}

/// How the server misbehaves, for one file.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Serves every file as it is.
    None,
    /// Closes the connection after `n` bytes of every transfer of the file (but the
    /// one-byte probe), for the first `times` transfers.
    Cut {
        file: String,
        n: usize,
        times: usize,
    },
    /// Serves the file with one byte changed (the listing keeps the true hash).
    Corrupt { file: String },
    /// Answers every request for the file with a redirect that names no `Location`.
    RedirectNowhere { file: String },
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The path and query.
    pub path: String,
    /// The `Range` header, if any.
    pub range: Option<String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

/// A Hub for one repository at [`COMMIT`] (revision `main`), on 127.0.0.1.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// Every request so far.
    pub requests: Arc<Mutex<Vec<Request>>>,
    /// The fault in force (may be changed between runs).
    pub fault: Arc<Mutex<Fault>>,
}

impl Server {
    /// Serves `repo` as `repo_id` until the test process ends.
    pub fn start(repo_id: &str, repo: Repo, fault: Fault) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let fault = Arc::new(Mutex::new(fault));
        let state = Arc::new((repo_id.to_string(), repo));
        let (seen, faults) = (Arc::clone(&requests), Arc::clone(&fault));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (state, seen, faults) =
                    (Arc::clone(&state), Arc::clone(&seen), Arc::clone(&faults));
                std::thread::spawn(move || {
                    let _ = serve(stream, &state.0, &state.1, &seen, &faults);
                });
            }
        });
        Server {
            endpoint,
            requests,
            fault,
        }
    }

    /// The requests so far (paths and headers).
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The file names whose bodies were asked for (not the one-byte probes), in order.
    pub fn transfers(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.path.contains("/resolve/") && r.range.as_deref() != Some("bytes=0-0"))
            .map(|r| r.path.rsplit('/').next().unwrap().to_string())
            .collect()
    }
}

/// Answers one connection (one request; `Connection: close`).
fn serve(
    stream: TcpStream,
    repo_id: &str,
    repo: &Repo,
    seen: &Mutex<Vec<Request>>,
    faults: &Mutex<Fault>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut range, mut authorization) = (None, None);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(v.trim().to_string()),
                "authorization" => authorization = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    seen.lock().unwrap().push(Request {
        path: path.clone(),
        range: range.clone(),
        authorization,
    });
    let mut out = stream;
    let listing = format!("/api/models/{repo_id}/revision/main");
    let resolve = format!("/{repo_id}/resolve/main/");
    if path.split('?').next() == Some(listing.as_str()) {
        let siblings: Vec<serde_json::Value> = repo
            .iter()
            .map(|(name, f)| {
                let mut s = serde_json::json!({
                    "rfilename": name,
                    "size": f.bytes.len(),
                    "blobId": "f".repeat(40),
                });
                if f.lfs {
                    s["lfs"] = serde_json::json!({"sha256": f.etag(), "size": f.bytes.len()});
                } else {
                    s["blobId"] = serde_json::json!(f.etag());
                }
                s
            })
            .collect();
        let body = serde_json::json!({"id": repo_id, "sha": COMMIT, "siblings": siblings});
        return respond(&mut out, "200 OK", &[], body.to_string().as_bytes());
    }
    let Some(name) = path.strip_prefix(&resolve) else {
        return respond(
            &mut out,
            "404 Not Found",
            &[],
            b"{\"error\":\"Repository not found\"}",
        );
    };
    let Some(file) = repo.get(name) else {
        return respond(
            &mut out,
            "404 Not Found",
            &[],
            b"{\"error\":\"Entry not found\"}",
        );
    };
    let mut bytes = file.bytes.clone();
    let total = bytes.len();
    let start: usize = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let end = match range.as_deref() {
        Some("bytes=0-0") => 0,
        _ => total - 1,
    };
    let probe = end == 0;
    if matches!(&*faults.lock().unwrap(), Fault::RedirectNowhere { file } if file == name) {
        let headers = [
            ("X-Repo-Commit", COMMIT.to_string()),
            ("ETag", format!("\"{}\"", file.etag())),
        ];
        return respond(&mut out, "302 Found", &headers, b"");
    }
    let mut cut = None;
    {
        let mut fault = faults.lock().unwrap();
        match &mut *fault {
            Fault::Corrupt { file } if file == name => bytes[total / 2] ^= 0xff,
            Fault::Cut { file, n, times } if file == name && !probe && *times > 0 => {
                *times -= 1;
                cut = Some(*n);
            }
            _ => {}
        }
    }
    let etag = format!("\"{}\"", file.etag());
    let mut headers = vec![
        ("X-Repo-Commit", COMMIT.to_string()),
        ("ETag", etag.clone()),
        ("Content-Range", format!("bytes {start}-{end}/{total}")),
    ];
    if file.lfs {
        headers.push(("X-Linked-Etag", etag));
        headers.push(("X-Linked-Size", total.to_string()));
    }
    let body = &bytes[start.min(total)..=end.min(total - 1)];
    match cut {
        Some(n) => {
            // Announce the whole body, send part of it, and hang up.
            write_head(&mut out, "206 Partial Content", &headers, body.len())?;
            out.write_all(&body[..n.min(body.len())])?;
            out.flush()
        }
        None => respond(&mut out, "206 Partial Content", &headers, body),
    }
}

fn write_head(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    len: usize,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    write_head(out, status, headers, body.len())?;
    out.write_all(body)?;
    out.flush()?;
    // Let the client read everything before the socket closes.
    let _ = out.shutdown(std::net::Shutdown::Write);
    let mut rest = [0u8; 64];
    let _ = out.read(&mut rest);
    Ok(())
}
