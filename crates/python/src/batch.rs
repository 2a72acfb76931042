//! Stepping many sequences at once: rows of a `[rows, vocab]` float32 array, each with its
//! own pipeline (or none: the row is left as it is), in parallel with the GIL released. The
//! result of a row depends only on that row, so it is the same with any number of threads.

use pyo3::prelude::*;

use crate::error::{guard, Error};
use crate::pipeline::PyPipeline;
use crate::pool;
use crate::raw::Raw;
use crate::sequence::{History, Mode, Sequence};

/// One row's history, from an address: (address of uint32 tokens, count, prompt length).
type RowHistory = (usize, usize, usize);

/// One row's failure: (row, kind, message), kind `"input"`, `"sampling"` or `"internal"`.
type RowError = (usize, &'static str, String);

/// Steps every row of the `[rows, vocab]` float32 array at `logits` (row `i` at
/// `logits + i * stride` elements) with `pipelines[i]`, writing each row in place (see
/// `Sequence::step_row`); rows whose pipeline is `None` are untouched. Returns the selected
/// tokens (`-1` for untouched rows, failed rows and in `distribution` mode) and the rows that
/// failed, in row order: a failed row is left as it was and does not stop the others (so
/// every other row's pipeline stepped exactly once).
///
/// The same pipeline object twice is refused (it would be locked twice).
#[pyfunction]
#[pyo3(signature = (pipelines, logits, rows, vocab, stride, histories, mode, threads))]
#[allow(clippy::too_many_arguments)]
pub fn step_rows(
    py: Python<'_>,
    pipelines: Vec<Option<Bound<'_, PyPipeline>>>,
    logits: usize,
    rows: usize,
    vocab: usize,
    stride: usize,
    histories: Vec<RowHistory>,
    mode: &str,
    threads: usize,
) -> PyResult<(Vec<i64>, Vec<RowError>)> {
    let mode = Mode::parse(mode)?;
    if pipelines.len() != rows || histories.len() != rows {
        return Err(Error::Input(format!(
            "{rows} rows, but {} pipelines and {} histories",
            pipelines.len(),
            histories.len()
        ))
        .into());
    }
    if rows > 1 && stride < vocab {
        return Err(Error::Input(format!("row stride {stride} < vocabulary {vocab}")).into());
    }
    let span = if rows == 0 {
        0
    } else {
        (rows - 1) * stride + vocab
    };
    let all = Raw::checked::<f32>(logits, span, format_args!("logits"))?;
    let mut rows_in = Vec::with_capacity(rows);
    for (i, &(addr, len, prompt_len)) in histories.iter().enumerate() {
        let history = Raw::checked::<u32>(addr, len, format_args!("row {i}: history"))?;
        let row = Raw {
            addr: all.addr + i * stride * std::mem::size_of::<f32>(),
            len: vocab,
        };
        rows_in.push((row, history, prompt_len));
    }
    for (i, p) in pipelines.iter().enumerate() {
        if let Some(p) = p {
            if let Some(j) = pipelines[..i]
                .iter()
                .position(|q| q.as_ref().is_some_and(|q| q.is(p)))
            {
                return Err(Error::Input(format!(
                    "rows {j} and {i} have the same Pipeline; each row needs its own \
                     (Pipeline.fork makes one)"
                ))
                .into());
            }
        }
    }
    let natives: Vec<Option<&PyPipeline>> = pipelines
        .iter()
        .map(|p| p.as_ref().map(|p| p.get()))
        .collect();
    let tokens = py.detach(|| {
        guard(|| {
            let mut guards: Vec<_> = natives.iter().map(|p| p.map(|p| p.lock())).collect();
            let mut seqs: Vec<Option<&mut Sequence>> =
                guards.iter_mut().map(|g| g.as_deref_mut()).collect();
            // SAFETY: the Python wrapper passes a live, writable, C-contiguous float32 array
            // of `rows` rows `stride` apart and live uint32 histories, referenced for the
            // call; each row goes to one thread only.
            unsafe { run(&mut seqs, &rows_in, mode, threads) }
        })
    })?;
    Ok(tokens)
}

/// One row's outcome: the token (select mode), nothing (distribution mode, untouched rows), or
/// why it failed.
type RowResult = Result<Option<u32>, Error>;

/// A contiguous share of the rows: their pipelines, their rows and histories, their results.
type Share<'s, 'q> = (
    &'s mut [Option<&'q mut Sequence>],
    &'s [(Raw, Raw, usize)],
    &'s mut [RowResult],
);

/// The fewest logits a share of a step is given (about 7 rows of 151 936, 21 of 49 152):
/// below, waking a parked worker costs about what it saves. On the 2-core development
/// machine, 8 rows of 151 936 took 17.3 µs per row on one thread (median of 3 runs) and
/// 16.3-20.6 split over two (4 runs), 8 rows of 49 152 12.4 against 12.9-19.6; 64 rows gained
/// 1.4-2.2× from the second thread.
const MIN_SHARE_VALUES: usize = 1 << 20;

/// Steps the rows: those with a pipeline are split into up to `threads` contiguous shares of
/// about as many such rows each, and no more shares than give each [`MIN_SHARE_VALUES`]
/// logits; the calling thread steps the first share and the workers of
/// [`pool::for_threads`] the others. Every row's result depends on that row alone.
///
/// # Safety
/// Every `Raw` must satisfy [`Raw::slice_mut`] (rows) and [`Raw::slice`] (histories), and no
/// two rows may overlap.
unsafe fn run(
    seqs: &mut [Option<&mut Sequence>],
    rows: &[(Raw, Raw, usize)],
    mode: Mode,
    threads: usize,
) -> Result<(Vec<i64>, Vec<RowError>), Error> {
    let mut results: Vec<RowResult> = rows.iter().map(|_| Ok(None)).collect();
    let step = |(seqs, rows, out): Share<'_, '_>| {
        for ((seq, &(row, history, prompt_len)), out) in seqs.iter_mut().zip(rows).zip(out) {
            let Some(seq) = seq else { continue };
            *out = guard(|| {
                // SAFETY: the caller's promise; this row is given to this thread only.
                let (row, tokens) = unsafe { (row.slice_mut::<f32>(), history.slice::<u32>()) };
                let history = History { tokens, prompt_len };
                seq.step_row(row, history, mode)
            });
        }
    };
    let active = seqs.iter().filter(|s| s.is_some()).count();
    let vocab = rows.first().map_or(0, |(row, _, _)| row.len);
    let worth = (active * vocab / MIN_SHARE_VALUES).max(1);
    let threads = threads.clamp(1, active.max(1)).min(worth);
    match (threads > 1).then(|| pool::for_threads(threads)).flatten() {
        None => step((seqs, rows, &mut results)),
        Some(pool) => {
            let mut shares = split(seqs, rows, &mut results, active.div_ceil(threads)).into_iter();
            pool.in_place_scope(|scope| {
                let first = shares.next();
                for share in shares {
                    scope.spawn(move |_| step(share));
                }
                if let Some(share) = first {
                    step(share);
                }
            });
        }
    }
    let mut tokens = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(t) => tokens.push(t.map_or(-1, i64::from)),
            Err(e) => {
                tokens.push(-1);
                let kind = match e {
                    Error::Input(_) => "input",
                    Error::Sampling(_) => "sampling",
                    _ => "internal",
                };
                errors.push((i, kind, e.to_string()));
            }
        }
    }
    Ok((tokens, errors))
}

/// Cuts the rows into contiguous shares of `per` rows with a pipeline each (the last may have
/// fewer); rows without a pipeline after the last such row are in no share.
fn split<'s, 'q>(
    mut seqs: &'s mut [Option<&'q mut Sequence>],
    mut rows: &'s [(Raw, Raw, usize)],
    mut out: &'s mut [RowResult],
    per: usize,
) -> Vec<Share<'s, 'q>> {
    let mut shares = Vec::new();
    while !seqs.is_empty() {
        // The end of this share: just past its `per`-th row with a pipeline.
        let mut seen = 0;
        let end = seqs
            .iter()
            .position(|s| {
                seen += usize::from(s.is_some());
                seen == per.max(1)
            })
            .map_or(seqs.len(), |i| i + 1);
        let (a, rest) = std::mem::take(&mut seqs).split_at_mut(end);
        let (b, rest_rows) = rows.split_at(end);
        let (c, rest_out) = std::mem::take(&mut out).split_at_mut(end);
        if a.iter().any(Option::is_some) {
            shares.push((a, b, c));
        }
        (seqs, rows, out) = (rest, rest_rows, rest_out);
    }
    shares
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn shares_cover_every_row_with_a_pipeline_once_in_order() {
        let registry = Arc::new(sieve_samplers::builtin_registry());
        for pattern in ["", "x", ".", "x.x.xx..x", "..xx..", "xxxxxxxx", "x......"] {
            let mut built: Vec<Option<Sequence>> = pattern
                .chars()
                .map(|c| {
                    (c == 'x')
                        .then(|| Sequence::new("greedy", 0, None, Arc::clone(&registry)).unwrap())
                })
                .collect();
            let active = built.iter().filter(|s| s.is_some()).count();
            for threads in 1..=5 {
                let mut seqs: Vec<Option<&mut Sequence>> =
                    built.iter_mut().map(Option::as_mut).collect();
                let raws: Vec<(Raw, Raw, usize)> = (0..seqs.len())
                    .map(|i| (Raw { addr: i, len: 0 }, Raw { addr: 0, len: 0 }, 0))
                    .collect();
                let mut out: Vec<RowResult> = raws.iter().map(|_| Ok(None)).collect();
                let per = active.div_ceil(threads.clamp(1, active.max(1)));
                let shares = split(&mut seqs, &raws, &mut out, per);
                assert!(shares.len() <= threads, "{pattern:?} {threads}");
                let rows: Vec<usize> = shares
                    .iter()
                    .flat_map(|(s, r, o)| {
                        assert!(s.len() == r.len() && r.len() == o.len());
                        s.iter()
                            .zip(r.iter())
                            .filter(|(s, _)| s.is_some())
                            .map(|(_, r)| r.0.addr)
                    })
                    .collect();
                let want: Vec<usize> = pattern
                    .char_indices()
                    .filter(|&(_, c)| c == 'x')
                    .map(|(i, _)| i)
                    .collect();
                assert_eq!(rows, want, "{pattern:?} {threads}");
            }
        }
    }
}
