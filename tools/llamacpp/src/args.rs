//! A small command-line reader: positionals in order, `--name value` options and flags.

use crate::error::{Error, Result};

/// The words after the program name, consumed as the command asks for them.
pub struct Args {
    words: Vec<String>,
}

impl Args {
    /// Wraps the raw words.
    pub fn new(words: Vec<String>) -> Self {
        Args { words }
    }

    /// Removes `name` if present; true when it was.
    pub fn flag(&mut self, name: &str) -> bool {
        match self.words.iter().position(|w| w == name) {
            Some(i) => {
                self.words.remove(i);
                true
            }
            None => false,
        }
    }

    /// Removes `name VALUE` if present and returns VALUE.
    pub fn option(&mut self, name: &str) -> Result<Option<String>> {
        let Some(i) = self.words.iter().position(|w| w == name) else {
            return Ok(None);
        };
        if i + 1 >= self.words.len() {
            return Err(Error::Usage(format!("{name} needs a value")));
        }
        let value = self.words.remove(i + 1);
        self.words.remove(i);
        Ok(Some(value))
    }

    /// `option(name)` parsed as a number, or `default`.
    pub fn number<T: std::str::FromStr>(&mut self, name: &str, default: T) -> Result<T> {
        match self.option(name)? {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| Error::Usage(format!("{name}: `{v}` is not a valid number"))),
        }
    }

    /// The next positional word (anything not starting with `--`), named `what` in errors.
    pub fn positional(&mut self, what: &str) -> Result<String> {
        let Some(i) = self.words.iter().position(|w| !w.starts_with("--")) else {
            return Err(Error::Usage(format!("missing {what}")));
        };
        Ok(self.words.remove(i))
    }

    /// Fails on any word left over (an unknown option or an extra argument).
    pub fn finish(self) -> Result<()> {
        match self.words.first() {
            None => Ok(()),
            Some(w) => Err(Error::Usage(format!("unexpected argument `{w}`"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Args {
        Args::new(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn options_come_out_wherever_they_stand_and_positionals_keep_their_order() {
        let mut a = args(&["f.gguf", "--threads", "3", "1,2", "--pure", "out"]);
        assert!(a.flag("--pure"));
        assert_eq!(a.number("--threads", 1).unwrap(), 3);
        assert_eq!(a.positional("FILE").unwrap(), "f.gguf");
        assert_eq!(a.positional("IDS").unwrap(), "1,2");
        assert_eq!(a.positional("OUT").unwrap(), "out");
        assert!(a.finish().is_ok());
    }

    #[test]
    fn usage_errors_name_what_is_wrong() {
        let mut a = args(&["--threads"]);
        assert!(matches!(a.option("--threads"), Err(Error::Usage(m)) if m.contains("--threads")));
        let mut a = args(&["--threads", "two"]);
        assert!(matches!(a.number("--threads", 1), Err(Error::Usage(m)) if m.contains("two")));
        let mut a = args(&[]);
        assert!(
            matches!(a.positional("FILE.gguf"), Err(Error::Usage(m)) if m.contains("FILE.gguf"))
        );
        let a = args(&["--bogus"]);
        assert!(matches!(a.finish(), Err(Error::Usage(m)) if m.contains("--bogus")));
    }

    #[test]
    fn a_missing_option_gives_the_default() {
        let mut a = args(&["x"]);
        assert_eq!(a.number("--reps", 5usize).unwrap(), 5);
        assert!(!a.flag("--chat"));
    }
}
