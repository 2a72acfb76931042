//! Running `sieve serve` from the integration tests and talking HTTP/1.1 to it over plain
//! TCP (no client library: the requests are small and `Connection: close` keeps the
//! reading simple).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long any one exchange may take.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// A running `sieve serve`, killed when dropped.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it wrote on stderr after the address.
    pub stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `sieve serve --port 0 ARGS` and waits until `/health` says the model is loaded.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sieve"))
            .arg("serve")
            .args(["--port", "0"])
            .args(args)
            .env_remove("SIEVE_PLUGIN_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sieve serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        lines.read_line(&mut first).expect("read stderr");
        let Some(addr) = first
            .split("listening on http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
        else {
            let mut rest = String::new();
            let _ = lines.read_to_string(&mut rest);
            let _ = child.kill();
            panic!("sieve serve did not start: {first}{rest}");
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let server = Server {
            child,
            addr,
            stderr,
        };
        let start = Instant::now();
        while server.get("/health").status != 200 {
            assert!(start.elapsed() < TIMEOUT, "the model did not load");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path, &[], None)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        request(
            self.addr,
            "POST",
            path,
            &[],
            Some(body.to_string().as_bytes()),
        )
    }

    /// A metric's value from `/metrics` (the first line starting with `name` and a space).
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").body;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no metric {name} in\n{text}"))
    }

    /// Waits until `done()` holds.
    pub fn wait_until(&self, what: &str, mut done: impl FnMut(&Server) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < TIMEOUT, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: String,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.status, self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `data:` payloads of a server-sent event stream.
    pub fn events(&self) -> Vec<String> {
        self.body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .map(str::to_string)
            .collect()
    }
}

/// Sends one request and reads the whole response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Response {
    let mut stream = send(addr, method, path, headers, body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the response");
    parse(&raw)
}

/// Connects and sends a request; the response is left to read.
pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let body = body.unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // The server may answer (413) and close before reading a large body.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
    stream
}

fn parse(raw: &[u8]) -> Response {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// Opens a streaming request and reads until `events` `data:` lines have arrived; the
/// connection is returned open (drop it to disconnect).
pub fn stream_some(addr: SocketAddr, path: &str, body: &Value, events: usize) -> TcpStream {
    let mut stream = send(addr, "POST", path, &[], Some(body.to_string().as_bytes()));
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while count(&seen, b"data: ") < events {
        let n = stream.read(&mut buf).expect("read the stream");
        assert!(
            n > 0,
            "the stream ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    stream
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| w == &needle)
        .count()
}

/// What `sieve generate ARGS` prints (its trailing newline removed).
pub fn generate(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .arg("generate")
        .args(args)
        .env_remove("SIEVE_PLUGIN_PATH")
        .output()
        .expect("run sieve generate");
    assert!(
        out.status.success(),
        "sieve generate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

/// The repository's `tests/fixtures/models/<name>` directory.
pub fn fixture_model(name: &str) -> String {
    format!(
        "{}/../../tests/fixtures/models/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Builds the plugin package `package` (with the cargo running the tests, in their profile)
/// and returns its library's path.
pub fn plugin(package: &str) -> String {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root).args([
        "build",
        "--message-format=json-render-diagnostics",
        "-p",
        package,
    ]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo build for a plugin");
    assert!(
        out.status.success(),
        "building {package} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| {
            m["reason"] == "compiler-artifact"
                && m["package_id"]
                    .as_str()
                    .is_some_and(|id| id.contains(&format!("#{package}@")))
                && m["target"]["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "cdylib"))
        })
        .and_then(|m| m["filenames"][0].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("cargo built no library for {package}"))
}
