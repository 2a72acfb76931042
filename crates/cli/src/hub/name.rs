//! A model's Hub name as `--model` takes it: `org/name`, optionally `@revision` (a branch, a
//! tag or a commit) and `:FILE.gguf` (one GGUF file of the repository instead of the
//! safetensors checkpoint).
//!
//! The name follows the Hub's rules for repository ids: two parts of letters, digits, `-`,
//! `_` and `.`, neither starting nor ending with `-` or `.`, no `--` nor `..`, at most 96
//! characters in all. Anything else is not a Hub name (and is left to be read as a path).

use std::fmt;

/// The revision used when the name gives none.
pub const DEFAULT_REVISION: &str = "main";

/// The longest repository id the Hub accepts.
const MAX_REPO_ID: usize = 96;

/// A parsed Hub name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubName {
    /// `org/name`.
    pub repo: String,
    /// The revision: a branch, a tag or a 40-digit commit (default `main`).
    pub revision: String,
    /// The one GGUF file asked for with `:FILE.gguf`, if any.
    pub file: Option<String>,
}

impl HubName {
    /// Reads `text` as a Hub name; `None` when it is not one (a path, a bare name).
    pub fn parse(text: &str) -> Option<HubName> {
        let (rest, file) = match text.rsplit_once(':') {
            Some((rest, file)) => (rest, Some(file)),
            None => (text, None),
        };
        let (repo, revision) = match rest.split_once('@') {
            Some((repo, revision)) => (repo, Some(revision)),
            None => (rest, None),
        };
        let (org, name) = repo.split_once('/')?;
        if repo.len() > MAX_REPO_ID || !is_part(org) || !is_part(name) {
            return None;
        }
        let revision = match revision {
            Some(r) if is_revision(r) => r.to_string(),
            Some(_) => return None,
            None => DEFAULT_REVISION.to_string(),
        };
        let file = match file {
            Some(f) if is_gguf_file(f) => Some(f.to_string()),
            Some(_) => return None,
            None => None,
        };
        Some(HubName {
            repo: repo.to_string(),
            revision,
            file,
        })
    }

    /// The repository's folder in the cache: `models--org--name`.
    pub fn folder(&self) -> String {
        format!("models--{}", self.repo.replace('/', "--"))
    }

    /// Whether the revision is a full commit hash (40 lowercase hex digits), which names a
    /// snapshot directly (no ref to read).
    pub fn is_commit(&self) -> bool {
        is_commit(&self.revision)
    }
}

impl fmt::Display for HubName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repo)?;
        if self.revision != DEFAULT_REVISION {
            write!(f, "@{}", self.revision)?;
        }
        if let Some(file) = &self.file {
            write!(f, ":{file}")?;
        }
        Ok(())
    }
}

/// Whether `text` is 40 lowercase hex digits.
pub fn is_commit(text: &str) -> bool {
    text.len() == 40
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One part of a repository id.
fn is_part(part: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    !part.is_empty()
        && part.chars().all(allowed)
        && !part.starts_with(['-', '.'])
        && !part.ends_with(['-', '.'])
        && !part.contains("--")
        && !part.contains("..")
}

/// A revision: a branch or tag name (which may hold `/`, as `refs/pr/1` does) without parts
/// that could leave the cache's `refs/` folder.
fn is_revision(text: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    !text.is_empty()
        && text.len() <= 255
        && text.chars().all(allowed)
        && text
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
}

/// A GGUF file name inside the repository (folders allowed, nothing that leaves it).
fn is_gguf_file(text: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    text.len() > ".gguf".len()
        && text.to_ascii_lowercase().ends_with(".gguf")
        && text.chars().all(allowed)
        && text
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_revisions_and_files() {
        let n = HubName::parse("HuggingFaceTB/SmolLM2-135M-Instruct").unwrap();
        assert_eq!(n.repo, "HuggingFaceTB/SmolLM2-135M-Instruct");
        assert_eq!(n.revision, "main");
        assert_eq!(n.file, None);
        assert_eq!(n.folder(), "models--HuggingFaceTB--SmolLM2-135M-Instruct");
        assert_eq!(n.to_string(), "HuggingFaceTB/SmolLM2-135M-Instruct");

        let n = HubName::parse("org/m.v1@refs/pr/3:q/m-Q4_K_M.gguf").unwrap();
        assert_eq!(
            (n.repo.as_str(), n.revision.as_str(), n.file.as_deref()),
            ("org/m.v1", "refs/pr/3", Some("q/m-Q4_K_M.gguf"))
        );
        assert_eq!(n.to_string(), "org/m.v1@refs/pr/3:q/m-Q4_K_M.gguf");
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let n = HubName::parse(&format!("a/b@{sha}")).unwrap();
        assert!(n.is_commit());
        assert!(!HubName::parse("a/b@v1.0").unwrap().is_commit());
    }

    #[test]
    fn paths_are_not_names() {
        for text in [
            "model",
            "./model",
            "/abs/model",
            "a/b/c",
            "../b",
            "a/.b",
            "a/b-",
            "a/b--c",
            "a/b..c",
            "a /b",
            "a/b@",
            "a/b@../x",
            "a/b@x//y",
            "a/b:model.safetensors",
            "a/b:../x.gguf",
            "a/b:.gguf",
            "C:/models/x",
            "",
        ] {
            assert_eq!(HubName::parse(text), None, "{text:?}");
        }
        let long = format!("org/{}", "x".repeat(MAX_REPO_ID));
        assert_eq!(HubName::parse(&long), None);
    }
}
