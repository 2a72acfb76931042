//! The two scans over the history window: where the last sequence breaker ends (the restart
//! limit), and how long a suffix of the window also ends at each earlier position (the
//! reverse Z-algorithm).

use crate::breakers::Breakers;

/// How many of the most recent tokens of `window` follow the most recent complete breaker:
/// scanning back from the last token, the first position holding a breaker's head token
/// followed by that breaker's whole tail (the longest such tail if several match) ends the
/// scan, and the limit is the number of tokens after the tail. `window.len()` when no
/// breaker occurs.
pub fn restart_limit(window: &[u32], breakers: &Breakers) -> usize {
    let n = window.len();
    // `back` = distance of the head from the last token (0 = the last token itself).
    for back in 0..n {
        let head = n - 1 - back;
        let mut longest: Option<usize> = None;
        for tail in breakers.tails(window[head]) {
            // The tail must fit between the head and the end of the window.
            if tail.len() > back || longest.is_some_and(|l| tail.len() <= l) {
                continue;
            }
            if window[head + 1..head + 1 + tail.len()] == tail[..] {
                longest = Some(tail.len());
            }
        }
        if let Some(len) = longest {
            return back - len;
        }
    }
    n
}

/// Fills `counts[j]` with the length of the longest suffix of `window` that also ends at
/// position `j < n − 1`, capped at `limit`; `counts[n − 1]` is 0.
///
/// This is the Z-algorithm run on the window read backwards (`r[k] = window[n − 1 − k]`):
/// `z[k]`, the longest common prefix of `r` and `r[k..]`, is the longest suffix of the window
/// ending at `n − 1 − k`. The Z-box `[left, right]` (the rightmost match found so far,
/// `r[left..=right] = r[..=right − left]`) lets each `z[k]` inside it start from the value at
/// the mirrored position, so each token is compared at most a constant number of times:
/// `O(n)` overall. Capping afterwards gives the same counts as llama.cpp, which caps while
/// scanning.
pub fn repeat_counts(window: &[u32], limit: usize, counts: &mut Vec<usize>) {
    let n = window.len();
    counts.clear();
    counts.resize(n, 0);
    let r = |k: usize| window[n - 1 - k];
    let mut z = vec![0usize; n];
    let (mut left, mut right) = (0usize, 0usize);
    for k in 1..n {
        let mut len = 0;
        if k <= right {
            len = z[k - left].min(right - k + 1);
        }
        while k + len < n && r(len) == r(k + len) {
            len += 1;
        }
        z[k] = len;
        if len > 0 && k + len - 1 > right {
            left = k;
            right = k + len - 1;
        }
        counts[n - 1 - k] = len.min(limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest suffix of `window` ending at `j`, by direct comparison.
    fn naive(window: &[u32], j: usize) -> usize {
        let n = window.len();
        (0..=j)
            .take_while(|&m| window[j - m] == window[n - 1 - m])
            .count()
    }

    #[test]
    fn the_llama_cpp_example() {
        // llama.cpp's comment: tokens a b c c b c y a b c give counts 0 0 3 1 0 2 0 0 0 0
        // (the suffix "a b c" also ends at index 2, "b c" at 5, "c" at 3).
        let (a, b, c, y) = (1, 2, 3, 25);
        let window = [a, b, c, c, b, c, y, a, b, c];
        let mut counts = Vec::new();
        repeat_counts(&window, usize::MAX, &mut counts);
        assert_eq!(counts, [0, 0, 3, 1, 0, 2, 0, 0, 0, 0]);
        repeat_counts(&window, 2, &mut counts);
        assert_eq!(counts, [0, 0, 2, 1, 0, 2, 0, 0, 0, 0]);
    }

    #[test]
    fn counts_match_direct_comparison() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut counts = Vec::new();
        for case in 0..400 {
            let n = case % 40;
            let alphabet = 1 + case % 4;
            let window: Vec<u32> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % alphabet as u64) as u32
                })
                .collect();
            let limit = case % 7;
            repeat_counts(&window, limit, &mut counts);
            for (j, &count) in counts.iter().enumerate().take(n.saturating_sub(1)) {
                assert_eq!(count, naive(&window, j).min(limit), "{window:?} at {j}");
            }
            if n > 0 {
                assert_eq!(counts[n - 1], 0);
            }
        }
    }

    #[test]
    fn restart_limits() {
        // Breakers: 9 alone; 5 followed by 6 (two tokens).
        let breakers = Breakers::from_token_lists(&[vec![9], vec![5, 6]]);
        // No breaker: the whole window.
        assert_eq!(restart_limit(&[1, 2, 3], &breakers), 3);
        // 9 three tokens from the end: three tokens follow it.
        assert_eq!(restart_limit(&[1, 9, 2, 3, 4], &breakers), 3);
        // 9 last: nothing follows.
        assert_eq!(restart_limit(&[1, 2, 9], &breakers), 0);
        // 5 6 with two tokens after: the head is 3 back, the tail 1 long, so 2.
        assert_eq!(restart_limit(&[1, 5, 6, 7, 8], &breakers), 2);
        // A head whose tail has not (yet) followed does not count; the older 9 does.
        assert_eq!(restart_limit(&[9, 1, 5], &breakers), 2);
        assert_eq!(restart_limit(&[9, 5, 7, 6], &breakers), 3);
        // The most recent breaker wins.
        assert_eq!(restart_limit(&[5, 6, 1, 9, 2], &breakers), 1);
    }

    #[test]
    fn the_longest_matching_tail_of_a_head_counts() {
        // Head 5 with tails [6] and [6, 7]: in 5 6 7 8 both match; the longer gives 1.
        let breakers = Breakers::from_token_lists(&[vec![5, 6], vec![5, 6, 7]]);
        assert_eq!(restart_limit(&[5, 6, 7, 8], &breakers), 1);
        assert_eq!(restart_limit(&[5, 6, 8, 8], &breakers), 2);
    }
}
