//! "Did you mean …?": the nearest known name to a mistyped one.

use alloc::string::String;
use alloc::vec::Vec;

/// Names longer than this are not compared (no one mistypes a 65-character name, and the
/// distance is quadratic).
const MAX_COMPARED: usize = 64;

/// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), in
/// characters.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = alloc::vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        before = core::mem::replace(&mut prev, core::mem::take(&mut cur));
        cur = alloc::vec![0; b.len() + 1];
    }
    prev[b.len()]
}

/// The known names nearest to `typed`, when some are close enough to be a likely typo: the
/// same name in another case, a known alias (`aliases`: `(alias, name)` pairs, from the
/// stages' [`sieve_core::Stage::ALIASES`]), the names within edit distance `max(1, len / 3)`
/// (all of those at the smallest distance, at most three), or the only name that `typed`
/// starts with or that starts with `typed`. Empty when nothing is close.
pub(crate) fn closest<'a>(
    typed: &str,
    known: &[&'a str],
    aliases: &[(&str, &str)],
) -> Vec<&'a str> {
    let len = typed.chars().count();
    if len == 0 || len > MAX_COMPARED {
        return Vec::new();
    }
    if let Some(&k) = known.iter().find(|k| k.eq_ignore_ascii_case(typed)) {
        return alloc::vec![k];
    }
    if let Some(&(_, ours)) = aliases
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(typed))
    {
        if let Some(&k) = known.iter().find(|&&k| k == ours) {
            return alloc::vec![k];
        }
    }
    let limit = (len / 3).max(1);
    let scored: Vec<(usize, &str)> = known
        .iter()
        .filter(|k| k.len() <= MAX_COMPARED)
        .map(|&k| (distance(typed, k), k))
        .filter(|&(d, _)| d <= limit)
        .collect();
    if let Some(best) = scored.iter().map(|&(d, _)| d).min() {
        return scored
            .into_iter()
            .filter(|&(d, _)| d == best)
            .map(|(_, k)| k)
            .take(3)
            .collect();
    }
    let prefixed: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| k.len() >= 3 && len >= 3 && (typed.starts_with(*k) || k.starts_with(typed)))
        .collect();
    if prefixed.len() == 1 {
        prefixed
    } else {
        Vec::new()
    }
}

/// "did you mean `a`?", "did you mean `a` or `b`?"; `None` for no names.
pub(crate) fn did_you_mean(names: &[&str]) -> Option<String> {
    let (last, rest) = names.split_last()?;
    let mut out = String::from("did you mean ");
    for name in rest {
        out.push_str(&alloc::format!("`{name}`, "));
    }
    if !rest.is_empty() {
        out.truncate(out.len() - 2);
        out.push_str(" or ");
    }
    out.push_str(&alloc::format!("`{last}`?"));
    Some(out)
}

/// `` `a`, `b`, `c` `` — at most `max` names, then "and N more".
pub(crate) fn list(names: &[&str], max: usize) -> String {
    let mut out = String::new();
    for (i, name) in names.iter().take(max).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('`');
        out.push_str(name);
        out.push('`');
    }
    if names.len() > max {
        out.push_str(&alloc::format!(" and {} more", names.len() - max));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGES: &[&str] = &[
        "dist", "greedy", "min_p", "penalty", "temp", "top_k", "top_p", "typical",
    ];

    #[test]
    fn distance_counts_edits_and_transpositions() {
        assert_eq!(distance("top_q", "top_p"), 1);
        assert_eq!(distance("tpo_k", "top_k"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("tëmp", "temp"), 1);
    }

    #[test]
    fn suggests_only_close_names() {
        let aliases = [("temperature", "temp"), ("repetition_penalty", "penalty")];
        let one = |typed: &str| closest(typed, STAGES, &aliases);
        assert_eq!(one("top_q"), ["top_k", "top_p"]);
        assert_eq!(one("top_pp"), ["top_p"]);
        assert_eq!(one("Top_K"), ["top_k"]);
        assert_eq!(one("temperature"), ["temp"]);
        assert_eq!(one("repetition_penalty"), ["penalty"]);
        assert_eq!(one("greddy"), ["greedy"]);
        assert_eq!(one("typical_sampling"), ["typical"]);
        assert!(one("banana").is_empty());
        assert!(one("x").is_empty());
        // `top` starts two names: no guess.
        assert!(one("top").is_empty());
        assert!(one(&"a".repeat(1000)).is_empty());
    }

    #[test]
    fn aliases_need_their_target() {
        assert!(closest("argmax", &["dist", "temp"], &[("argmax", "greedy")]).is_empty());
        assert_eq!(
            closest("argmax", &["greedy"], &[("argmax", "greedy")]),
            ["greedy"]
        );
    }

    #[test]
    fn did_you_mean_joins_names() {
        assert_eq!(did_you_mean(&[]), None);
        assert_eq!(did_you_mean(&["a"]).unwrap(), "did you mean `a`?");
        assert_eq!(
            did_you_mean(&["a", "b"]).unwrap(),
            "did you mean `a` or `b`?"
        );
        assert_eq!(
            did_you_mean(&["a", "b", "c"]).unwrap(),
            "did you mean `a`, `b` or `c`?"
        );
    }

    #[test]
    fn lists_are_capped() {
        assert_eq!(list(&["a", "b"], 5), "`a`, `b`");
        assert_eq!(list(&["a", "b", "c"], 2), "`a`, `b` and 1 more");
    }
}
