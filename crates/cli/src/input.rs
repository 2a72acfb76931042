//! Reading `--logits` / `--probs`: a comma list or a file, turned into one logits vector.
//!
//! # Telling a file from a list
//! If the argument names an existing file, it is read as a file; otherwise it is parsed as a
//! comma list, except that an argument that looks like a path (it contains `/` or `\`, or ends
//! in `.json`, `.npy`, `.bin`, `.f32` or `.raw`) is reported as a missing file.
//!
//! # Files, by extension (case-insensitive)
//! - `.json`: an array of numbers (`null`, `"-inf"`, `"inf"`, `"nan"` allowed);
//! - `.npy`: a NumPy array of float32 or float64, shape `(N,)`, `(1, N)` or `(N, 1)`;
//! - anything else: raw little-endian `f32`, length a multiple of 4.
//!
//! # Values
//! Token `i` gets value `i`. As logits, a value may be finite, `-inf` (masked) or NaN (treated
//! as `-inf`); `+inf` is rejected. As probabilities (`--probs`), a value must lie in `[0, 1]`
//! and becomes `ln p` (`p = 0` gives `-inf`); the values need not sum to 1.
//!
//! # Limits
//! At most [`MAX_LOGITS`] values (2^27 = 134 217 728, far above any real vocabulary: 512 MiB
//! of `f32`). A file is refused before it is read when it is larger than its format needs for
//! that many values (raw: 512 MiB; `.npy`: 1 GiB plus its header), and a `.json` file when it
//! is larger than [`MAX_JSON_BYTES`] (32 MiB: parsing JSON takes several times its size).
//!
//! Error messages name the value by its 1-based position and its token id, and never name the
//! flag (the caller adds it as context).

mod history;
mod json;
mod list;
mod npy;

use std::path::Path;

use anyhow::{bail, Context as _, Result};

pub use history::parse_history;
pub use list::counts;

/// How the numbers of `--logits` / `--probs` are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The numbers are logits.
    Logits,
    /// The numbers are probabilities; logits are their natural logarithms.
    Probs,
}

/// The most values `--logits` / `--probs` (and `bench sampler --vocab`) accept: 2^27.
pub const MAX_LOGITS: usize = 1 << 27;

/// The largest `.json` logits file read.
pub const MAX_JSON_BYTES: u64 = 32 << 20;

/// Extensions that make a missing file an error instead of a comma list.
const PATH_EXTENSIONS: [&str; 5] = [".json", ".npy", ".bin", ".f32", ".raw"];

/// Reads the logits named by `arg` (a comma list or a file path), as logits or probabilities.
///
/// # Errors
/// A missing or unreadable file, a malformed list or file, no values at all, a `+inf` logit, or
/// a probability outside `[0, 1]`.
pub fn load(arg: &str, scale: Scale) -> Result<Vec<f32>> {
    let values = read_values(arg)?;
    if values.is_empty() {
        bail!("no values given");
    }
    if values.len() > MAX_LOGITS {
        bail!(
            "{} values given; at most {MAX_LOGITS} are accepted",
            values.len()
        );
    }
    match scale {
        Scale::Logits => check_logits(&values)?,
        Scale::Probs => return probs_to_logits(&values),
    }
    Ok(values)
}

/// The raw numbers of a comma list or a file.
fn read_values(arg: &str) -> Result<Vec<f32>> {
    let path = Path::new(arg);
    if path.is_file() {
        return read_file(path).with_context(|| format!("reading `{arg}`"));
    }
    if path.exists() {
        bail!("`{arg}` is not a file");
    }
    if looks_like_path(arg) {
        bail!("no such file `{arg}`");
    }
    list::parse(arg)
}

/// Whether a text that names no file was meant as a path.
fn looks_like_path(arg: &str) -> bool {
    let lower = arg.to_ascii_lowercase();
    arg.contains(['/', '\\']) || PATH_EXTENSIONS.iter().any(|ext| lower.ends_with(ext))
}

/// Reads a file by its extension.
fn read_file(path: &Path) -> Result<Vec<f32>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let limit = match ext.as_deref() {
        Some("json") => MAX_JSON_BYTES,
        // float64 values and a header of at most 4 GiB… but no sane header is over 64 KiB.
        Some("npy") => MAX_LOGITS as u64 * 8 + (64 << 10),
        _ => MAX_LOGITS as u64 * 4,
    };
    let bytes = read_at_most(path, limit)?;
    match ext.as_deref() {
        Some("json") => json::parse(&bytes),
        Some("npy") => npy::parse(&bytes),
        _ => raw_f32(&bytes),
    }
}

/// The bytes of the file at `path`, refused (before reading more than `limit + 1` bytes)
/// when it holds more than `limit`.
fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let announced = file.metadata()?.len();
    let too_large = |size: &str| {
        anyhow::anyhow!(
            "the file is {size} bytes, more than the {limit} this format needs for \
             {MAX_LOGITS} values (the most accepted)"
        )
    };
    if announced > limit {
        return Err(too_large(&announced.to_string()));
    }
    let mut bytes = Vec::with_capacity(announced as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large("over"));
    }
    Ok(bytes)
}

/// Raw little-endian `f32` values.
fn raw_f32(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        bail!(
            "raw float32 data must be a multiple of 4 bytes long, found {} bytes \
             (use .json or .npy for other formats)",
            bytes.len()
        );
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Rejects `+inf`, which no softmax can normalize.
fn check_logits(values: &[f32]) -> Result<()> {
    if let Some(i) = values.iter().position(|&x| x == f32::INFINITY) {
        bail!(
            "value {} (token {i}) is +inf; a logit must be finite, -inf or NaN",
            i + 1
        );
    }
    Ok(())
}

/// `ln p` for each probability, which must lie in `[0, 1]`.
fn probs_to_logits(values: &[f32]) -> Result<Vec<f32>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            if (0.0..=1.0).contains(&p) {
                Ok((p as f64).ln() as f32)
            } else {
                bail!(
                    "value {} (token {i}) is {p}; a probability must lie in [0, 1]",
                    i + 1
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_parsed_when_no_file_exists() {
        assert_eq!(
            load("1.5,-2,-inf", Scale::Logits).unwrap(),
            vec![1.5, -2.0, f32::NEG_INFINITY]
        );
        let err = load("1,inf", Scale::Logits).unwrap_err().to_string();
        assert_eq!(
            err,
            "value 2 (token 1) is +inf; a logit must be finite, -inf or NaN"
        );
        assert_eq!(
            load("", Scale::Logits).unwrap_err().to_string(),
            "value 1 is empty"
        );
    }

    #[test]
    fn probabilities_become_log_probabilities() {
        let logits = load("0.5,0,1", Scale::Probs).unwrap();
        assert_eq!(logits, vec![0.5f64.ln() as f32, f32::NEG_INFINITY, 0.0]);
        let err = load("0.5,1.5", Scale::Probs).unwrap_err().to_string();
        assert_eq!(
            err,
            "value 2 (token 1) is 1.5; a probability must lie in [0, 1]"
        );
        let err = load("nan", Scale::Probs).unwrap_err().to_string();
        assert_eq!(
            err,
            "value 1 (token 0) is NaN; a probability must lie in [0, 1]"
        );
    }

    #[test]
    fn missing_paths_are_reported_as_files() {
        for arg in ["no/such/dir", "missing.npy", "MISSING.JSON", "x.f32"] {
            let err = load(arg, Scale::Logits).unwrap_err().to_string();
            assert_eq!(err, format!("no such file `{arg}`"));
        }
        let dir = tempfile::tempdir().unwrap();
        let arg = dir.path().to_str().unwrap();
        let err = load(arg, Scale::Logits).unwrap_err().to_string();
        assert_eq!(err, format!("`{arg}` is not a file"));
    }

    #[test]
    fn files_are_read_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("logits.bin");
        let bytes: Vec<u8> = [1.0f32, -2.5, f32::NEG_INFINITY]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        std::fs::write(&raw, &bytes).unwrap();
        let got = load(raw.to_str().unwrap(), Scale::Logits).unwrap();
        assert_eq!(got, vec![1.0, -2.5, f32::NEG_INFINITY]);

        std::fs::write(&raw, &bytes[..5]).unwrap();
        let err = format!(
            "{:#}",
            load(raw.to_str().unwrap(), Scale::Logits).unwrap_err()
        );
        assert!(err.ends_with("must be a multiple of 4 bytes long, found 5 bytes (use .json or .npy for other formats)"), "{err}");
        assert!(err.starts_with("reading `"), "{err}");

        let json = dir.path().join("p.JSON");
        std::fs::write(&json, "[0.25, 0.75]").unwrap();
        let got = load(json.to_str().unwrap(), Scale::Probs).unwrap();
        assert_eq!(got, vec![0.25f64.ln() as f32, 0.75f64.ln() as f32]);
    }

    #[test]
    fn an_empty_file_gives_no_values() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("empty.f32");
        std::fs::write(&raw, b"").unwrap();
        let err = load(raw.to_str().unwrap(), Scale::Logits)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "no values given");
    }
}
