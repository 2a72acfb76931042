//! Where a `Batch` step's time goes, per row: the card pipeline's `Sequence::step_row`
//! (select mode: load, stages, write-back) beside the single passes it is made of — the
//! one-pass load (`Candidates::load_checked_from`), the load of the best 40 + 64 candidates
//! the card pipeline asks for (`Candidates::load_best_checked_from`), a read of the row (`math::max`, the floor
//! `sieve bench` uses), a plain copy and a fill — each timed on rows refreshed from a source
//! before every run, as `bench/bench_step.py` refreshes them.
//!
//!     cargo run --release --example step_cost [-- VOCAB ROWS ITERS]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use sieve_core::Candidates;
use sieve_python::sequence::{History, Mode, Sequence};

const CARD: &str = "penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)";

/// Median microseconds per row of `f(work)` over `iters` runs, `work` refreshed from `src`
/// before each (not timed).
fn timed(
    iters: usize,
    rows: usize,
    src: &[f32],
    work: &mut [f32],
    mut f: impl FnMut(&mut [f32]),
) -> f64 {
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        work.copy_from_slice(src);
        let t = Instant::now();
        f(work);
        times.push(t.elapsed().as_secs_f64() * 1e6 / rows as f64);
    }
    times.sort_by(f64::total_cmp);
    times[iters / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: VOCAB ROWS ITERS"))
        .collect();
    let vocab = args.first().copied().unwrap_or(151_936).max(1);
    let rows = args.get(1).copied().unwrap_or(1).max(1);
    let iters = args.get(2).copied().unwrap_or(200).max(1);
    // Deterministic, roughly normal logits (a sum of four uniforms), spread like the Python
    // bench's.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let src: Vec<f32> = (0..rows * vocab)
        .map(|_| ((0..4).map(|_| uniform()).sum::<f32>() - 2.0) * 4.3)
        .collect();
    let mut work = src.clone();
    let history: Vec<u32> = (1..65).map(|t| t % vocab as u32).collect();
    let registry = Arc::new(sieve_samplers::builtin_registry());
    let mut seqs: Vec<Sequence> = (0..rows)
        .map(|i| {
            let mut s = Sequence::new(CARD, i as u64, None, Arc::clone(&registry))
                .expect("the card pipeline builds");
            for &t in &history {
                s.accept(t);
            }
            s
        })
        .collect();
    let h = History {
        tokens: &history,
        prompt_len: 32,
    };

    let step = timed(iters, rows, &src, &mut work, |work| {
        for (s, row) in seqs.iter_mut().zip(work.chunks_mut(vocab)) {
            black_box(s.step_row(row, h, Mode::Select).expect("a clean row steps"));
        }
    });
    let mut c = Candidates::new();
    let load = timed(iters, rows, &src, &mut work, |work| {
        for row in work.chunks(vocab) {
            black_box(c.load_checked_from(row));
        }
    });
    let best = timed(iters, rows, &src, &mut work, |work| {
        for row in work.chunks(vocab) {
            black_box(c.load_best_checked_from(row, 40 + history.len(), &history));
        }
    });
    let read = timed(iters, rows, &src, &mut work, |work| {
        for row in work.chunks(vocab) {
            black_box(sieve_core::math::max(row));
        }
    });
    let mut buf = vec![0.0f32; vocab];
    let copy = timed(iters, rows, &src, &mut work, |work| {
        for row in work.chunks(vocab) {
            buf.copy_from_slice(row);
            black_box(&buf);
        }
    });
    let fill = timed(iters, rows, &src, &mut work, |work| {
        for row in work.chunks_mut(vocab) {
            row.fill(f32::NEG_INFINITY);
            black_box(&row);
        }
    });
    println!(
        "vocab {vocab} rows {rows}, µs per row: step_row {step:.2} | load {load:.2} | \
         load best {best:.2} | read {read:.2} | copy {copy:.2} | fill {fill:.2}"
    );
}
