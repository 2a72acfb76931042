//! The origins whose browser requests the server answers besides its own
//! (`--allowed-origins`), and the normal form origins are compared in.

use crate::error::quoted;

/// The origins, besides the server's own, whose browser requests are answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins {
    /// `*` was given: every origin.
    any: bool,
    /// Normalized origins (`scheme://host[:port]`, lower case, no default port).
    list: Vec<String>,
}

impl AllowedOrigins {
    /// No origin but the server's own (the default).
    pub fn none() -> Self {
        AllowedOrigins::default()
    }

    /// Every origin (`*`).
    pub fn any() -> Self {
        AllowedOrigins {
            any: true,
            list: Vec::new(),
        }
    }

    /// Reads `--allowed-origins` values: each a comma-separated list of origins
    /// (`https://app.example.com`, `http://localhost:3000`, `null`) or `*`.
    ///
    /// # Errors
    /// The first item that is not an origin (a path, no scheme, an empty host).
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, String> {
        let mut allowed = AllowedOrigins::none();
        let items = values.iter().flat_map(|v| v.as_ref().split(','));
        for item in items.map(str::trim).filter(|i| !i.is_empty()) {
            if item == "*" {
                allowed.any = true;
            } else {
                let origin = normalize(item).ok_or_else(|| {
                    format!(
                        "`{}` is not an origin: give scheme://host[:port] (no path), \
                         `null` or `*`",
                        quoted(item)
                    )
                })?;
                allowed.list.push(origin);
            }
        }
        Ok(allowed)
    }

    /// Whether a request with this `Origin` may be answered.
    pub fn allows(&self, origin: &str) -> bool {
        self.any || normalize(origin).is_some_and(|o| self.list.contains(&o))
    }

    /// Whether no origin is listed (and not `*`).
    pub fn is_empty(&self) -> bool {
        !self.any && self.list.is_empty()
    }
}

/// `scheme://host[:port]` in lower case without its scheme's default port, or `null`; `None`
/// for anything else.
pub(crate) fn normalize(origin: &str) -> Option<String> {
    let origin = origin.trim().to_ascii_lowercase();
    if origin == "null" {
        return Some(origin);
    }
    let (scheme, authority) = origin.split_once("://")?;
    let authority = authority.strip_suffix('/').unwrap_or(authority);
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let authority_ok = !authority.is_empty()
        && !authority.contains(['/', '?', '#', '@', ' '])
        && !authority.starts_with(':');
    if !scheme_ok || !authority_ok {
        return None;
    }
    let authority = match (scheme, authority.rsplit_once(':')) {
        ("http", Some((host, "80"))) | ("https", Some((host, "443"))) => host,
        _ => authority,
    };
    Some(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_normalize() {
        assert_eq!(
            normalize("HTTP://Example.com:80/").as_deref(),
            Some("http://example.com")
        );
        assert_eq!(
            normalize("https://a.test:443").as_deref(),
            Some("https://a.test")
        );
        assert_eq!(
            normalize("http://a.test:443").as_deref(),
            Some("http://a.test:443")
        );
        assert_eq!(normalize("null").as_deref(), Some("null"));
        for bad in [
            "a.test",
            "http://",
            "http://a.test/path",
            "://a",
            "http://u@a",
        ] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn allowed_origins_parse_lists_and_star() {
        let a = AllowedOrigins::parse(&["https://a.test, http://b.test:3000", "null"]).unwrap();
        assert!(a.allows("https://a.test"));
        assert!(a.allows("HTTPS://A.TEST:443"));
        assert!(a.allows("http://b.test:3000"));
        assert!(a.allows("null"));
        assert!(!a.allows("http://a.test"));
        assert!(!a.allows("http://b.test"));
        assert!(AllowedOrigins::parse(&["*"])
            .unwrap()
            .allows("http://any.test"));
        assert!(AllowedOrigins::parse::<&str>(&[]).unwrap().is_empty());
        assert!(!AllowedOrigins::none().allows("http://any.test"));
        let e = AllowedOrigins::parse(&["https://a.test/app"]).unwrap_err();
        assert!(e.contains("https://a.test/app"), "{e}");
    }
}
