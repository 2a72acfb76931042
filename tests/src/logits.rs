//! The logit fixtures, generated in code (small ones from a formula, `zipf50k` from a fixed
//! seed), so they can be reproduced by hand when a snapshot is checked.
//!
//! The small fixtures have 16 tokens and use multiples of 0.25 (exact in `f32`), so hand
//! computations start from the exact values:
//!
//! | fixture | what it is |
//! |---|---|
//! | [`peaked`] | token 1 at 5.0, far above the rest (which lie in `[-1, 1.5]`) |
//! | [`flat`] | every token at 1.0 |
//! | [`ties`] | four groups of equal logits (2.0, 1.0, -0.5, -3.0), interleaved by id |
//! | [`neg_inf`] | [`base`] with tokens 0, 6 and 14 at `-inf` |
//! | [`nan`] | [`base`] with tokens 1, 3 and 10 NaN (loading turns NaN into `-inf`) |
//! | [`zipf50k`] | 50 000 tokens, `−1.1·ln(rank+1)` plus noise in `[−0.05, 0.05)`, shuffled |

use crate::splitmix::SplitMix64;

/// Number of tokens of the small fixtures.
pub const SMALL: usize = 16;

/// Number of tokens of [`zipf50k`].
pub const ZIPF_LEN: usize = 50_000;

/// The seed of [`zipf50k`]'s noise and shuffle.
pub const ZIPF_SEED: u64 = 0x5EED_2024;

/// A named logits vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The fixture's name, as used in snapshot text.
    pub name: &'static str,
    /// The logits, token `i` at index `i`.
    pub logits: Vec<f32>,
}

/// The background of the small fixtures: token `i` has `0.25 · ((7i) mod 11) − 1`, a value in
/// `[-1, 1.5]` (with repeats: `(7i) mod 11` cycles every 11 tokens).
pub fn base() -> Vec<f32> {
    (0..SMALL)
        .map(|i| ((7 * i) % 11) as f32 * 0.25 - 1.0)
        .collect()
}

/// One token far above the rest: [`base`] with token 1 at 5.0.
pub fn peaked() -> Vec<f32> {
    let mut l = base();
    l[1] = 5.0;
    l
}

/// Every token at 1.0.
pub fn flat() -> Vec<f32> {
    vec![1.0; SMALL]
}

/// Four groups of equal logits: 2.0 for {2, 7, 11}, 1.0 for {0, 4, 9, 13, 15}, -0.5 for
/// {1, 5, 8, 12}, -3.0 for {3, 6, 10, 14}.
pub fn ties() -> Vec<f32> {
    let mut l = vec![0.0; SMALL];
    let groups: [(f32, &[usize]); 4] = [
        (2.0, &[2, 7, 11]),
        (1.0, &[0, 4, 9, 13, 15]),
        (-0.5, &[1, 5, 8, 12]),
        (-3.0, &[3, 6, 10, 14]),
    ];
    for (value, ids) in groups {
        for &i in ids {
            l[i] = value;
        }
    }
    l
}

/// [`base`] with tokens 0, 6 and 14 masked (`-inf`); 6 and 14 would be among the most likely.
pub fn neg_inf() -> Vec<f32> {
    let mut l = base();
    for i in [0, 6, 14] {
        l[i] = f32::NEG_INFINITY;
    }
    l
}

/// [`base`] with tokens 1, 3 and 10 NaN (they count as `-inf`); 3 would be the most likely.
pub fn nan() -> Vec<f32> {
    let mut l = base();
    for i in [1, 3, 10] {
        l[i] = f32::NAN;
    }
    l
}

/// A 50 000-token Zipf-like vector: [`zipf`] with [`ZIPF_LEN`] tokens and seed [`ZIPF_SEED`].
pub fn zipf50k() -> Vec<f32> {
    zipf(ZIPF_LEN, ZIPF_SEED)
}

/// A Zipf-like vector of `n` tokens: the token of rank `r` (0-based) has
/// `−1.1·ln(r + 1) + 0.1·(u_r − 0.5)` with `u_r` uniform in `[0, 1)`, computed in `f64` and
/// rounded to `f32`; the ranks are then spread over the ids by a Fisher–Yates shuffle. Both use
/// one [`SplitMix64`] seeded with `seed`: first the `n` noise draws, then the shuffle (for `i`
/// from `n − 1` down to 1, swap `i` with `below(i + 1)`).
pub fn zipf(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let mut l: Vec<f32> = (0..n)
        .map(|r| (-1.1 * ((r + 1) as f64).ln() + 0.1 * (rng.next_f64() - 0.5)) as f32)
        .collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        l.swap(i, j);
    }
    l
}

/// The small fixtures, in snapshot order.
pub fn small() -> Vec<Fixture> {
    vec![
        Fixture {
            name: "peaked",
            logits: peaked(),
        },
        Fixture {
            name: "flat",
            logits: flat(),
        },
        Fixture {
            name: "ties",
            logits: ties(),
        },
        Fixture {
            name: "neg_inf",
            logits: neg_inf(),
        },
        Fixture {
            name: "nan",
            logits: nan(),
        },
    ]
}

/// Every fixture, in snapshot order ([`small`], then `zipf50k`).
pub fn all() -> Vec<Fixture> {
    let mut v = small();
    v.push(Fixture {
        name: "zipf50k",
        logits: zipf50k(),
    });
    v
}

/// Each token's rank (0 = most likely) in descending logit order, ties by ascending id; NaN
/// counts as `-inf`.
pub fn ranks(logits: &[f32]) -> Vec<usize> {
    let key = |i: usize| {
        if logits[i].is_nan() {
            f32::NEG_INFINITY
        } else {
            logits[i]
        }
    };
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
    let mut rank = vec![0; logits.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    rank
}
