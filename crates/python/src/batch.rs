//! Stepping many sequences at once: rows of a `[rows, vocab]` float32 array, each with its
//! own pipeline (or none: the row is left as it is), in parallel with the GIL released. The
//! result of a row depends only on that row, so it is the same with any number of threads.

use pyo3::prelude::*;

use crate::error::{guard, Error};
use crate::pipeline::PyPipeline;
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
    let all = Raw::checked::<f32>(logits, span, "logits")?;
    let mut rows_in = Vec::with_capacity(rows);
    for (i, &(addr, len, prompt_len)) in histories.iter().enumerate() {
        let history = Raw::checked::<u32>(addr, len, &format!("row {i}: history"))?;
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
    let threads = threads.clamp(1, rows.max(1));
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

/// Steps the rows, `threads` contiguous chunks at once.
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
    let step = |seqs: &mut [Option<&mut Sequence>], rows: &[(Raw, Raw, usize)]| {
        seqs.iter_mut()
            .zip(rows)
            .map(|(seq, &(row, history, prompt_len))| {
                let Some(seq) = seq else { return Ok(None) };
                guard(|| {
                    // SAFETY: the caller's promise; this row is given to this thread only.
                    let (row, tokens) = unsafe { (row.slice_mut::<f32>(), history.slice::<u32>()) };
                    let history = History { tokens, prompt_len };
                    seq.step_row(row, history, mode)
                })
            })
            .collect::<Vec<Result<Option<u32>, Error>>>()
    };
    let results: Vec<Result<Option<u32>, Error>> = if threads <= 1 {
        step(seqs, rows)
    } else {
        let chunk = rows.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = seqs
                .chunks_mut(chunk)
                .zip(rows.chunks(chunk))
                .map(|(seqs, rows)| scope.spawn(move || step(seqs, rows)))
                .collect();
            let mut all = Vec::with_capacity(rows.len());
            for (h, rows) in handles.into_iter().zip(rows.chunks(chunk)) {
                match h.join() {
                    Ok(r) => all.extend(r),
                    Err(_) => all.extend(
                        rows.iter()
                            .map(|_| Err(Error::Internal("a worker thread panicked".into()))),
                    ),
                }
            }
            all
        })
    };
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
