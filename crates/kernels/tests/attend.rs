//! `attend`: a chunk of `n` query rows equals `n` single steps bit for bit, matches a plain f64
//! softmax attention, and honours GQA, sliding windows and soft caps.

use sieve_kernels::{attend, attend_many, Attention, Isa, KeysValues, Sequence};

struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (u >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn vec(&mut self, len: usize, scale: f32) -> Vec<f32> {
        (0..len).map(|_| scale * self.unit()).collect()
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A rayon pool of `threads` threads (the kernels' team takes its width from it).
fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Position-major keys or values (`[len, kv_heads, d]`) laid out head-major, `[kv_heads,
/// capacity, d]`, the positions past `len` NaN: an output that read one would show it.
fn head_major(rows: &[f32], cfg: &Attention, capacity: usize) -> Vec<f32> {
    let (kv, d) = (cfg.kv_heads, cfg.head_dim);
    let len = rows.len() / (kv * d);
    let mut out = vec![f32::NAN; kv * capacity * d];
    for t in 0..len {
        for h in 0..kv {
            out[(h * capacity + t) * d..][..d].copy_from_slice(&rows[(t * kv + h) * d..][..d]);
        }
    }
    out
}

/// Keys and values in one of the two layouts `KeysValues` takes.
enum Layout {
    /// `[len, kv_heads, d]`, borrowed as they are.
    Positions(Vec<f32>, Vec<f32>),
    /// `[kv_heads, capacity, d]` copies, `len` positions used.
    Heads(Vec<f32>, Vec<f32>, usize, usize),
}

impl Layout {
    /// The position-major `keys` and `values`, head-major (with `spare` unused positions
    /// per kv head) when `heads`.
    fn of(keys: &[f32], values: &[f32], cfg: &Attention, heads: bool, spare: usize) -> Self {
        let len = keys.len() / (cfg.kv_heads * cfg.head_dim);
        if heads {
            let capacity = len + spare;
            Layout::Heads(
                head_major(keys, cfg, capacity),
                head_major(values, cfg, capacity),
                len,
                capacity,
            )
        } else {
            Layout::Positions(keys.to_vec(), values.to_vec())
        }
    }

    fn run(&self, cfg: &Attention) -> KeysValues<'_> {
        match self {
            Layout::Positions(k, v) => KeysValues::position_major(k, v, cfg.kv_heads, cfg.head_dim),
            Layout::Heads(k, v, len, capacity) => {
                KeysValues::head_major(k, v, *len, *capacity, cfg.head_dim)
            }
        }
    }
}

fn configs() -> Vec<Attention> {
    let base = Attention {
        heads: 9,
        kv_heads: 3,
        head_dim: 64,
        scale: 0.125,
        window: None,
        softcap: None,
    };
    vec![
        base,
        Attention {
            heads: 4,
            kv_heads: 4,
            head_dim: 80,
            ..base
        },
        Attention {
            heads: 12,
            kv_heads: 1,
            head_dim: 20,
            ..base
        },
        Attention {
            window: Some(5),
            ..base
        },
        Attention {
            softcap: Some(2.0),
            ..base
        },
        Attention {
            window: Some(3),
            softcap: Some(1.5),
            heads: 8,
            kv_heads: 2,
            head_dim: 32,
            scale: 0.3,
        },
    ]
}

/// Attention in f64 straight from the definition, with `-inf` masking.
fn naive(cfg: &Attention, q: &[f32], past: usize, k: &[f32], v: &[f32]) -> Vec<f64> {
    let (h, kvh, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let n = q.len() / (h * d);
    let mut out = vec![0f64; n * h * d];
    for i in 0..n {
        let p = past + i;
        for head in 0..h {
            let g = head / (h / kvh);
            let qv = &q[(i * h + head) * d..][..d];
            let scores: Vec<f64> = (0..past + n)
                .map(|t| {
                    let kt = &k[(t * kvh + g) * d..][..d];
                    let mut s = qv
                        .iter()
                        .zip(kt)
                        .map(|(&a, &b)| f64::from(a) * f64::from(b))
                        .sum::<f64>()
                        * f64::from(cfg.scale);
                    if let Some(cap) = cfg.softcap {
                        s = f64::from(cap) * (s / f64::from(cap)).tanh();
                    }
                    let seen = t <= p && cfg.window.is_none_or(|w| t + w > p);
                    if seen {
                        s
                    } else {
                        f64::NEG_INFINITY
                    }
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let z: f64 = e.iter().sum();
            for dd in 0..d {
                out[(i * h + head) * d + dd] = (0..past + n)
                    .map(|t| e[t] * f64::from(v[(t * kvh + g) * d + dd]))
                    .sum::<f64>()
                    / z;
            }
        }
    }
    out
}

#[test]
fn a_chunk_equals_single_steps_bit_for_bit() {
    let mut rng = Rng(17);
    for cfg in configs() {
        let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        for (past, n) in [(0, 1), (0, 13), (7, 20), (40, 3)] {
            let len = past + n;
            let q = rng.vec(n * row, 2.0);
            let k = rng.vec(len * kv_row, 2.0);
            let v = rng.vec(len * kv_row, 1.0);
            for isa in Isa::available() {
                let mut chunk = vec![0f32; n * row];
                sieve_kernels::attend_on(isa, &cfg, &q, past, &k, &v, &mut chunk);
                for i in 0..n {
                    let upto = (past + i + 1) * kv_row;
                    let mut one = vec![0f32; row];
                    sieve_kernels::attend_on(
                        isa,
                        &cfg,
                        &q[i * row..][..row],
                        past + i,
                        &k[..upto],
                        &v[..upto],
                        &mut one,
                    );
                    assert_eq!(
                        bits(&one),
                        bits(&chunk[i * row..][..row]),
                        "{cfg:?} {isa:?} past={past} n={n} i={i}"
                    );
                }
            }
        }
    }
}

/// Every query-row count (below and above the blocked path's threshold, every remainder of
/// its position blocks and row tiles), with and without a past, gives each row the bits of
/// that row computed alone.
#[test]
fn every_row_count_equals_single_rows() {
    let mut rng = Rng(41);
    for cfg in configs() {
        let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        for past in [0, 3, 21] {
            let len = past + 34;
            let q = rng.vec(34 * row, 2.0);
            let k = rng.vec(len * kv_row, 2.0);
            let v = rng.vec(len * kv_row, 1.0);
            for isa in Isa::available() {
                let single: Vec<Vec<u32>> = (0..34)
                    .map(|i| {
                        let upto = (past + i + 1) * kv_row;
                        let mut one = vec![0f32; row];
                        let q = &q[i * row..][..row];
                        sieve_kernels::attend_on(
                            isa,
                            &cfg,
                            q,
                            past + i,
                            &k[..upto],
                            &v[..upto],
                            &mut one,
                        );
                        bits(&one)
                    })
                    .collect();
                for n in 1..=34 {
                    let upto = (past + n) * kv_row;
                    let mut chunk = vec![0f32; n * row];
                    let (k, v) = (&k[..upto], &v[..upto]);
                    sieve_kernels::attend_on(isa, &cfg, &q[..n * row], past, k, v, &mut chunk);
                    for (i, want) in single.iter().enumerate().take(n) {
                        assert_eq!(
                            &bits(&chunk[i * row..][..row]),
                            want,
                            "{cfg:?} {isa:?} past={past} n={n} i={i}"
                        );
                    }
                }
            }
        }
    }
}

/// A long prefill (many tasks on several threads, long key ranges) equals its rows alone.
#[test]
fn a_long_chunk_on_threads_equals_single_rows() {
    let mut rng = Rng(43);
    let cfg = configs()[0];
    let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
    let (past, n) = (37, 300);
    let len = past + n;
    let q = rng.vec(n * row, 2.0);
    let k = rng.vec(len * kv_row, 2.0);
    let v = rng.vec(len * kv_row, 1.0);
    for threads in [1, 3] {
        let pool = pool(threads);
        let mut chunk = vec![0f32; n * row];
        pool.install(|| attend(&cfg, &q, past, &k, &v, &mut chunk));
        for i in [0, 1, 7, 8, 150, 299] {
            let upto = (past + i + 1) * kv_row;
            let mut one = vec![0f32; row];
            let qi = &q[i * row..][..row];
            attend(&cfg, qi, past + i, &k[..upto], &v[..upto], &mut one);
            assert_eq!(
                bits(&one),
                bits(&chunk[i * row..][..row]),
                "threads={threads} i={i}"
            );
        }
    }
}

/// Several sequences in one `attend_many` call (decode steps and prefill chunks mixed, long
/// and short caches, one to eight of them, their caches position-major or head-major with
/// spare room, on one and several threads) each get exactly what `attend` gives them alone.
#[test]
fn a_batch_of_sequences_equals_each_alone() {
    let mut rng = Rng(77);
    for cfg in configs() {
        let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        // (past, new rows) per sequence.
        let shapes = [
            (300, 1),
            (0, 1),
            (17, 1),
            (5, 12),
            (280, 1),
            (1, 3),
            (64, 1),
            (90, 9),
        ];
        for count in [1, 2, 5, 8] {
            let seqs: Vec<_> = shapes[..count]
                .iter()
                .enumerate()
                .map(|(j, &(past, n))| {
                    let len = past + n;
                    let q = rng.vec(n * row, 2.0);
                    let k = rng.vec(len * kv_row, 2.0);
                    let v = rng.vec(len * kv_row, 1.0);
                    let cache = Layout::of(&k, &v, &cfg, j % 2 == 1, j);
                    (past, q, k, v, cache)
                })
                .collect();
            let alone: Vec<Vec<f32>> = seqs
                .iter()
                .map(|(past, q, k, v, _)| {
                    let mut out = vec![0f32; q.len()];
                    attend(&cfg, q, *past, k, v, &mut out);
                    out
                })
                .collect();
            for threads in [1, 2, 3] {
                let pool = pool(threads);
                let mut outs: Vec<Vec<f32>> = seqs.iter().map(|s| vec![9f32; s.1.len()]).collect();
                let mut jobs: Vec<Sequence<'_>> = seqs
                    .iter()
                    .zip(outs.iter_mut())
                    .map(|((past, q, _, _, cache), out)| Sequence {
                        queries: q,
                        past: *past,
                        shared: KeysValues::default(),
                        own: cache.run(&cfg),
                        out,
                    })
                    .collect();
                pool.install(|| attend_many(&cfg, &mut jobs));
                for (j, (got, want)) in outs.iter().zip(&alone).enumerate() {
                    assert_eq!(
                        bits(got),
                        bits(want),
                        "{cfg:?} count={count} threads={threads} seq={j}"
                    );
                }
            }
        }
    }
}

/// Forks of one prompt hand `attend_many` the prompt's keys and values as one shared run
/// and their own later positions as a second: every fork gets exactly what `attend` gives it
/// with all its keys in one buffer. The forks have advanced by different amounts, some are
/// decoding and some verifying several rows (the blocked path from 8), they share the call
/// with a sequence of its own, and a second group of forks shares another prompt. The
/// prompts are held head-major with spare room (a frozen cache), the forks' own runs in
/// either layout.
#[test]
fn forks_reading_a_shared_prompt_equal_each_alone() {
    let mut rng = Rng(91);
    for cfg in configs() {
        let kv_row = cfg.kv_heads * cfg.head_dim;
        let row = cfg.heads * cfg.head_dim;
        for prompt in [1, 9, 40, 300] {
            // Two prompts; per fork: (which prompt, own positions before, new rows).
            let prompts: Vec<(Vec<f32>, Vec<f32>)> = (0..2)
                .map(|_| (rng.vec(prompt * kv_row, 2.0), rng.vec(prompt * kv_row, 1.0)))
                .collect();
            let frozen: Vec<Layout> = prompts
                .iter()
                .map(|(k, v)| Layout::of(k, v, &cfg, true, 3))
                .collect();
            let forks = [
                (0, 0, 1),
                (0, 3, 1),
                (1, 0, 1),
                (0, 0, 1),
                (0, 7, 2),
                (1, 20, 1),
                (0, 1, 9),
                (0, 2, 1),
                (1, 5, 3),
            ];
            let seqs: Vec<_> = forks
                .iter()
                .enumerate()
                .map(|(j, &(which, before, n))| {
                    let own = before + n;
                    let q = rng.vec(n * row, 2.0);
                    let k = rng.vec(own * kv_row, 2.0);
                    let v = rng.vec(own * kv_row, 1.0);
                    let cache = Layout::of(&k, &v, &cfg, j % 2 == 0, 2 * j);
                    (which, prompt + before, q, k, v, cache)
                })
                .collect();
            // A sequence of its own rides along.
            let lone_past = 33;
            let lone_q = rng.vec(row, 2.0);
            let lone_k = rng.vec((lone_past + 1) * kv_row, 2.0);
            let lone_v = rng.vec((lone_past + 1) * kv_row, 1.0);
            let alone: Vec<Vec<f32>> = seqs
                .iter()
                .map(|(which, past, q, k, v, _)| {
                    let (pk, pv) = &prompts[*which];
                    let keys = [pk.as_slice(), k].concat();
                    let values = [pv.as_slice(), v].concat();
                    let mut out = vec![0f32; q.len()];
                    attend(&cfg, q, *past, &keys, &values, &mut out);
                    out
                })
                .collect();
            let mut lone_alone = vec![0f32; row];
            attend(&cfg, &lone_q, lone_past, &lone_k, &lone_v, &mut lone_alone);
            for threads in [1, 2, 3] {
                let pool = pool(threads);
                let mut outs: Vec<Vec<f32>> = seqs.iter().map(|s| vec![9f32; s.2.len()]).collect();
                let mut lone_out = vec![9f32; row];
                let mut jobs: Vec<Sequence<'_>> = seqs
                    .iter()
                    .zip(outs.iter_mut())
                    .map(|((which, past, q, _, _, cache), out)| Sequence {
                        queries: q,
                        past: *past,
                        shared: frozen[*which].run(&cfg),
                        own: cache.run(&cfg),
                        out,
                    })
                    .collect();
                jobs.insert(
                    2,
                    Sequence {
                        queries: &lone_q,
                        past: lone_past,
                        shared: KeysValues::default(),
                        own: KeysValues::position_major(
                            &lone_k,
                            &lone_v,
                            cfg.kv_heads,
                            cfg.head_dim,
                        ),
                        out: &mut lone_out,
                    },
                );
                pool.install(|| attend_many(&cfg, &mut jobs));
                drop(jobs);
                for (j, (got, want)) in outs.iter().zip(&alone).enumerate() {
                    assert_eq!(
                        bits(got),
                        bits(want),
                        "{cfg:?} prompt={prompt} threads={threads} fork={j}"
                    );
                }
                assert_eq!(bits(&lone_out), bits(&lone_alone), "{cfg:?} the lone one");
            }
        }
    }
}

#[test]
fn instruction_sets_agree() {
    let mut rng = Rng(23);
    for cfg in configs() {
        let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        let (past, n) = (30, 50); // large enough to run in parallel
        let q = rng.vec(n * row, 2.0);
        let k = rng.vec((past + n) * kv_row, 2.0);
        let v = rng.vec((past + n) * kv_row, 1.0);
        let mut want = vec![0f32; n * row];
        sieve_kernels::attend_on(Isa::Scalar, &cfg, &q, past, &k, &v, &mut want);
        for isa in Isa::available() {
            let mut got = vec![0f32; n * row];
            sieve_kernels::attend_on(isa, &cfg, &q, past, &k, &v, &mut got);
            assert_eq!(bits(&got), bits(&want), "{cfg:?} {isa:?}");
        }
    }
}

#[test]
fn matches_naive_f64_attention() {
    let mut rng = Rng(29);
    for cfg in configs() {
        let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        let (past, n) = (11, 9);
        let q = rng.vec(n * row, 2.0);
        let k = rng.vec((past + n) * kv_row, 2.0);
        let v = rng.vec((past + n) * kv_row, 1.0);
        let mut got = vec![0f32; n * row];
        attend(&cfg, &q, past, &k, &v, &mut got);
        let want = naive(&cfg, &q, past, &k, &v);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!((f64::from(g) - w).abs() < 1e-5, "{cfg:?} [{i}]: {g} vs {w}");
        }
    }
}

#[test]
fn a_window_of_one_returns_the_own_value() {
    let cfg = Attention {
        heads: 2,
        kv_heads: 1,
        head_dim: 16,
        scale: 1.0,
        window: Some(1),
        softcap: None,
    };
    let mut rng = Rng(31);
    let (past, n) = (5, 4);
    let q = rng.vec(n * 32, 3.0);
    let k = rng.vec((past + n) * 16, 3.0);
    let v = rng.vec((past + n) * 16, 1.0);
    let mut out = vec![0f32; n * 32];
    attend(&cfg, &q, past, &k, &v, &mut out);
    for i in 0..n {
        for h in 0..2 {
            assert_eq!(out[(i * 2 + h) * 16..][..16], v[(past + i) * 16..][..16]);
        }
    }
}

#[test]
fn a_soft_cap_flattens_large_scores() {
    // Two keys with scores 100 and 0: uncapped, the first takes all the weight; capped at 1,
    // the scores become tanh(100) ≈ 1 and 0, so the weights are e/(e+1) and 1/(e+1).
    let q = [1.0f32, 0.0];
    let k = [100.0f32, 0.0, 0.0, 0.0];
    let v = [1.0f32, 0.0, 0.0, 1.0];
    let base = Attention {
        heads: 1,
        kv_heads: 1,
        head_dim: 2,
        scale: 1.0,
        window: None,
        softcap: None,
    };
    let mut out = [0f32; 2];
    attend(&base, &q, 1, &k, &v, &mut out);
    assert!(out[0] == 1.0 && out[1] < 1e-40, "{out:?}"); // e^-100
    attend(
        &Attention {
            softcap: Some(1.0),
            ..base
        },
        &q,
        1,
        &k,
        &v,
        &mut out,
    );
    let e = std::f32::consts::E;
    assert!(
        (out[0] - e / (e + 1.0)).abs() < 1e-6 && (out[1] - 1.0 / (e + 1.0)).abs() < 1e-6,
        "{out:?}"
    );
}

/// `values` stored as `T` (rounded to nearest, ties to even) and widened back: what an `f32`
/// run must hold to equal a `T` run.
fn round_trip<T: Copy>(values: &[f32], narrow: fn(f32) -> T, widen: fn(T) -> f32) -> Vec<T> {
    let stored: Vec<T> = values.iter().map(|&x| narrow(x)).collect();
    debug_assert!(stored.iter().zip(values).all(|(&s, &x)| {
        let w = widen(s);
        w.is_nan() == x.is_nan()
    }));
    stored
}

/// Keys and values stored as `bf16` or `f16` give bit for bit what `f32` runs holding the
/// widened values give: decode rows and prefill chunks, forks reading a narrow frozen prompt
/// with own runs in either layout, a lone sequence, on every instruction set and one or two
/// threads. (Widening is exact, and each path reads the narrow elements in the `f32` path's
/// order.)
#[test]
fn narrow_caches_equal_f32_caches_holding_the_widened_values() {
    fn check<T: sieve_kernels::CacheElement>(narrow: fn(f32) -> T, widen: fn(T) -> f32) {
        let mut rng = Rng(404);
        for cfg in configs() {
            let (row, kv_row) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
            let prompt = 70;
            let pk = round_trip(
                &head_major(&rng.vec(prompt * kv_row, 2.0), &cfg, prompt + 5),
                narrow,
                widen,
            );
            let pv = round_trip(
                &head_major(&rng.vec(prompt * kv_row, 1.0), &cfg, prompt + 5),
                narrow,
                widen,
            );
            // (shared prompt?, own positions before, new rows, head-major own run?)
            let shapes = [
                (true, 0, 1, true),
                (true, 4, 1, false),
                (false, 40, 1, true),
                (false, 3, 12, false),
                (true, 2, 9, true),
            ];
            let seqs: Vec<_> = shapes
                .iter()
                .map(|&(shared, before, n, heads)| {
                    let own = before + n;
                    let q = rng.vec(n * row, 2.0);
                    let (k, v) = (rng.vec(own * kv_row, 2.0), rng.vec(own * kv_row, 1.0));
                    let (k, v) = if heads {
                        (head_major(&k, &cfg, own + 3), head_major(&v, &cfg, own + 3))
                    } else {
                        (k, v)
                    };
                    let (k, v) = (round_trip(&k, narrow, widen), round_trip(&v, narrow, widen));
                    let past = before + if shared { prompt } else { 0 };
                    (shared, past, own, heads, q, k, v)
                })
                .collect();
            let widened = |x: &[T]| x.iter().map(|&e| widen(e)).collect::<Vec<f32>>();
            let (wpk, wpv) = (widened(&pk), widened(&pv));
            let wide: Vec<_> = seqs
                .iter()
                .map(|s| (widened(&s.5), widened(&s.6)))
                .collect();
            for isa in Isa::available() {
                for threads in [1, 2] {
                    let pool = pool(threads);
                    let mut outs: Vec<Vec<Vec<f32>>> = (0..2)
                        .map(|_| seqs.iter().map(|s| vec![9f32; s.4.len()]).collect())
                        .collect();
                    let [narrow_outs, wide_outs] = &mut outs[..] else {
                        unreachable!()
                    };
                    let mut narrow_jobs: Vec<Sequence<'_>> = seqs
                        .iter()
                        .zip(narrow_outs.iter_mut())
                        .map(|((shared, past, own, heads, q, k, v), out)| Sequence {
                            queries: q,
                            past: *past,
                            shared: if *shared {
                                frozen(&pk, &pv, prompt, &cfg)
                            } else {
                                KeysValues::default()
                            },
                            own: run(k, v, *own, *heads, &cfg),
                            out,
                        })
                        .collect();
                    let mut wide_jobs: Vec<Sequence<'_>> = seqs
                        .iter()
                        .zip(&wide)
                        .zip(wide_outs.iter_mut())
                        .map(
                            |(((shared, past, own, heads, q, _, _), (k, v)), out)| Sequence {
                                queries: q,
                                past: *past,
                                shared: if *shared {
                                    frozen(&wpk, &wpv, prompt, &cfg)
                                } else {
                                    KeysValues::default()
                                },
                                own: run(k, v, *own, *heads, &cfg),
                                out,
                            },
                        )
                        .collect();
                    assert_eq!(narrow_jobs[0].own.dtype(), T::DTYPE);
                    pool.install(|| {
                        sieve_kernels::attend_many_on(isa, &cfg, &mut narrow_jobs);
                        sieve_kernels::attend_many_on(isa, &cfg, &mut wide_jobs);
                    });
                    drop((narrow_jobs, wide_jobs));
                    for (j, (got, want)) in narrow_outs.iter().zip(wide_outs.iter()).enumerate() {
                        assert!(got.iter().all(|x| x.is_finite()), "{cfg:?} {isa:?} seq={j}");
                        assert_eq!(
                            bits(got),
                            bits(want),
                            "{:?} {cfg:?} {isa:?} threads={threads} seq={j}",
                            T::DTYPE
                        );
                    }
                }
            }
        }
    }
    /// An own run of `own` positions, head-major with 3 spare or position-major.
    fn run<'a, E: sieve_kernels::CacheElement>(
        k: &'a [E],
        v: &'a [E],
        own: usize,
        heads: bool,
        cfg: &Attention,
    ) -> KeysValues<'a> {
        if heads {
            KeysValues::head_major(k, v, own, own + 3, cfg.head_dim)
        } else {
            KeysValues::position_major(k, v, cfg.kv_heads, cfg.head_dim)
        }
    }
    /// The frozen prompt: head-major with 5 spare.
    fn frozen<'a, E: sieve_kernels::CacheElement>(
        k: &'a [E],
        v: &'a [E],
        prompt: usize,
        cfg: &Attention,
    ) -> KeysValues<'a> {
        KeysValues::head_major(k, v, prompt, prompt + 5, cfg.head_dim)
    }
    check(half::bf16::from_f32, half::bf16::to_f32);
    check(half::f16::from_f32, half::f16::to_f32);
}
