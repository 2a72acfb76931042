//! Comma lists: the one splitter ([`items`]) behind `--logits 1.5,-2,-inf,nan` ([`parse`])
//! and the token-id lists of `--history` and `--tokens`.

use anyhow::{bail, Result};

/// Splits `text` at commas and reads each item, trimmed of spaces, with `read(n, item)`, where
/// `n` is the item's 1-based position (for messages).
///
/// # Errors
/// An empty item (`1,,2`, a trailing comma), named by its position, or `read`'s error.
pub(super) fn items<T>(text: &str, read: impl Fn(usize, &str) -> Result<T>) -> Result<Vec<T>> {
    text.split(',')
        .enumerate()
        .map(|(i, item)| {
            let item = item.trim();
            let n = i + 1;
            if item.is_empty() {
                bail!("value {n} is empty");
            }
            read(n, item)
        })
        .collect()
}

/// Parses a comma list of counts from 1 to `max` (`--batch 1,4,8`).
///
/// # Errors
/// An empty item, or one that is not an integer from 1 to `max`, named by its position.
pub fn counts(text: &str, max: usize) -> Result<Vec<usize>> {
    items(text, |n, item| match item.parse::<usize>() {
        Ok(c) if (1..=max).contains(&c) => Ok(c),
        _ => bail!("value {n} (`{item}`) is not a count from 1 to {max}"),
    })
}

/// Parses a comma list of `f32` values. Spaces around a value are ignored; `inf`, `-inf`,
/// `infinity` and `nan` are accepted in any case.
///
/// # Errors
/// An empty item, or one that is not a number (named by its 1-based position), or a finite
/// number too large for `f32`.
pub(super) fn parse(text: &str) -> Result<Vec<f32>> {
    items(text, |n, item| {
        let Ok(x) = item.parse::<f32>() else {
            bail!("value {n} (`{item}`) is not a number");
        };
        if x.is_infinite() && !item.to_ascii_lowercase().contains("inf") {
            bail!("value {n} (`{item}`) is too large for a float32");
        }
        Ok(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_specials() {
        let got = parse("1.5, -2 ,1e-3,-inf,INF,Infinity").unwrap();
        assert_eq!(
            got,
            vec![
                1.5,
                -2.0,
                1e-3,
                f32::NEG_INFINITY,
                f32::INFINITY,
                f32::INFINITY
            ]
        );
        let nan = parse("nan,NaN").unwrap();
        assert!(nan.iter().all(|x| x.is_nan()));
    }

    #[test]
    fn errors_name_the_position() {
        assert_eq!(
            parse("1,2,abc").unwrap_err().to_string(),
            "value 3 (`abc`) is not a number"
        );
        assert_eq!(parse("1,,2").unwrap_err().to_string(), "value 2 is empty");
        assert_eq!(parse("1,2,").unwrap_err().to_string(), "value 3 is empty");
        assert_eq!(
            parse("1e39").unwrap_err().to_string(),
            "value 1 (`1e39`) is too large for a float32"
        );
        assert_eq!(
            parse("0x10").unwrap_err().to_string(),
            "value 1 (`0x10`) is not a number"
        );
    }
}
