//! `--history`: the token ids before this step.

use anyhow::{bail, Result};

/// Parses a comma list of token ids, each below `vocab` (the number of logits). An empty or
/// blank text is an empty history.
///
/// # Errors
/// An item that is not a non-negative integer, or an id outside the vocabulary, named by its
/// 1-based position.
pub fn parse_history(text: &str, vocab: usize) -> Result<Vec<u32>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    super::list::items(text, |n, item| {
        let Ok(id) = item.parse::<u32>() else {
            bail!(
                "value {n} (`{item}`) is not a token id (an integer from 0 to {})",
                u32::MAX
            );
        };
        if id as usize >= vocab {
            bail!("value {n} (token {id}) is outside the vocabulary of {vocab} logits");
        }
        Ok(id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_within_the_vocabulary() {
        assert_eq!(parse_history("1, 2,0", 3).unwrap(), vec![1, 2, 0]);
        assert_eq!(parse_history("", 3).unwrap(), Vec::<u32>::new());
        assert_eq!(parse_history("  ", 3).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn errors_name_the_position() {
        let err = parse_history("1,3", 3).unwrap_err().to_string();
        assert_eq!(
            err,
            "value 2 (token 3) is outside the vocabulary of 3 logits"
        );
        let err = parse_history("1,-1", 3).unwrap_err().to_string();
        assert_eq!(
            err,
            "value 2 (`-1`) is not a token id (an integer from 0 to 4294967295)"
        );
        assert_eq!(
            parse_history("1,,2", 3).unwrap_err().to_string(),
            "value 2 is empty"
        );
    }
}
