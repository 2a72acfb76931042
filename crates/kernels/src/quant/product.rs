//! The quantized matrix product: the activation rows quantized once per call (once for all
//! the weights of a `matmul_nt_many`), output columns (weight rows) split between the team's
//! threads, and for each weight row every activation row in tiles of
//! [`TILE_ROWS`](super::dot::TILE_ROWS) while its blocks are in cache (prefill reuses each
//! unpacked weight group across a tile). Every output is one row's dot product, whose bits
//! depend only on that activation row and the weight row (the contract of `quant`).

use std::ops::Range;

use super::act::{Act, ActRow};
use super::dot::{dot_rows, Kernel, TILE_ROWS};
use super::k::{self, BlockQ8K};
use super::QuantType;
use crate::{split, Isa, WeightView};

/// Weight rows a task takes at a time in prefill (their blocks stay in L1 while every tile of
/// activation rows passes).
const CHUNK: usize = 16;

/// Activation rows from which a legacy product takes a panel kernel (`panel` on AVX-512
/// VNNI, from `amx::TILE` rows with AMX-INT8 tiles where the CPU has them and `SIEVE_AMX=1`
/// asks for them, `panel_avx2` on AVX2); a K-quant (`k::panel`, `k::panel_avx2`), whose panels cost
/// more to fill, from `PANEL_ROWS_K`. Decode (one row) stays on the tile kernels, which read
/// each weight once without unpacking it anywhere. (`quant::tests::speed_matmul`,
/// `[1536, 576]` Q4_0: 2 rows 22 µs on the panel, 32 on the tiles; `[576, 1536]` Q2_K–Q6_K:
/// even at 2 rows, the panel ahead from 4, on one thread and, with the work shared, on two.)
const PANEL_ROWS: usize = 2;
/// See [`PANEL_ROWS`].
const PANEL_ROWS_K: usize = 4;

/// Which panel kernel a product runs on, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Panels {
    /// The tile kernels (`dot`, `k::dot_rows`).
    Tiles,
    /// AVX-512 VNNI, 16 weight rows a panel (`panel`, `k::panel`).
    Avx512,
    /// AMX-INT8 tiles on the AVX-512 VNNI legacy panel, 16 activation rows a tile product
    /// (`amx`; only with `SIEVE_AMX=1`).
    Amx,
    /// AVX2, 8 weight rows a panel (`panel_avx2`, `k::panel_avx2`): for AVX2, AVX-VNNI
    /// and AVX-512 without VNNI; the legacy types with AVX-VNNI `vpdpbusd` when `vnni`.
    Avx2 {
        /// Whether the legacy panel uses AVX-VNNI.
        vnni: bool,
    },
}

impl Panels {
    /// Weight rows a panel holds.
    fn width(self) -> usize {
        match self {
            Panels::Avx2 { .. } => 8,
            _ => 16,
        }
    }
}

/// The kernel `ty`'s product of `m` activation rows runs on with `kernel`; the bits are the
/// same on every one.
fn panels(kernel: Kernel, ty: QuantType, m: usize, row_bytes: usize) -> Panels {
    #[cfg(test)]
    if TILES_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
        return Panels::Tiles;
    }
    // An empty reduction (`k = 0`) stays on the tiles, which write each output's bias (the
    // K-quant panels count activation rows by their blocks, and there are none).
    if m < if ty.is_k() { PANEL_ROWS_K } else { PANEL_ROWS } || row_bytes == 0 {
        return Panels::Tiles;
    }
    #[cfg(target_arch = "x86_64")]
    {
        match kernel {
            Kernel::Avx512Vnni
                if !ty.is_k()
                    && m >= super::amx::TILE
                    && super::panel::fits(row_bytes)
                    && super::amx::enabled() =>
            {
                Panels::Amx
            }
            Kernel::Avx512Vnni
                if if ty.is_k() {
                    k::panel::takes(ty, row_bytes)
                } else {
                    super::panel::fits(row_bytes)
                } =>
            {
                Panels::Avx512
            }
            // AVX-512 without VNNI (Skylake-SP/X) has AVX2 too (checked all the same: the
            // panels need it).
            Kernel::Avx2 | Kernel::AvxVnni | Kernel::Avx512
                if (!ty.is_k() || k::panel_avx2::takes(ty)) && Isa::Avx2.is_available() =>
            {
                Panels::Avx2 {
                    vnni: kernel == Kernel::AvxVnni,
                }
            }
            _ => Panels::Tiles,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, row_bytes);
        Panels::Tiles
    }
}

/// Tasks of a product on the panel kernels (`width` weight rows a panel): as many as keep
/// each one about `PANEL_TASK_NS` of work (one panel or a few), so the threads finish
/// together (the last task a thread takes is short) while handing a task over stays a small
/// cost.
fn panel_tasks(m: usize, n: usize, k: usize, width: usize) -> usize {
    /// Work a task should hold, in ns.
    const PANEL_TASK_NS: f64 = 20_000.0;
    /// A 16-row panel's time per activation row and 32 elements of `k`, in ns (measured on
    /// this machine's AVX-512 VNNI, `quant::tests::speed_matmul`: about 2.3; an 8-row AVX2
    /// panel takes about as long).
    const NS_PER_ROW_BLOCK: f64 = 2.3;
    let panels = n.div_ceil(width);
    let per_panel = (m * k.div_ceil(32)) as f64 * NS_PER_ROW_BLOCK;
    let per_task = (PANEL_TASK_NS / per_panel.max(1.0)).ceil().max(1.0) as usize;
    panels.div_ceil(per_task).max(1)
}

/// Set by the timing tests to run the tile kernels where the panels would (the bits are the
/// same either way).
#[cfg(test)]
pub(crate) static TILES_ONLY: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// One quantized product: the weight, its bias and where its `[m, n]` output goes.
struct Job<'a, 'w> {
    /// The weight (quantized).
    w: &'a WeightView<'w>,
    /// `[n]`, or none.
    bias: Option<&'a [f32]>,
    /// `[m, n]` floats.
    out: *mut f32,
}

/// A panel kind's `fill`: `rows` weight rows of `w` unpacked into the panel.
type PanelFill<P> = unsafe fn(QuantType, &[u8], usize, &mut P);
/// A panel kind's `multiply`: every activation row against the panel, into `out` (row
/// stride `n`), plus the bias.
type PanelMultiply<P, A> = unsafe fn(QuantType, &P, &[A], Option<&[f32]>, *mut f32, usize);

/// The weight rows `cols` of `job` a panel of `width` rows at a time: each filled into
/// `panel` by `fill`, then multiplied by every activation row of `acts` by `multiply`.
///
/// # Safety
/// The CPU has the instructions of `fill` and `multiply`, which take `ty`; `acts` holds the
/// activation rows in the form `multiply` needs; the output columns `cols` of every row are
/// the caller's alone; the bias, when given, holds the weight's `n` values.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn by_panels<P, A>(
    ty: QuantType,
    job: &Job<'_, '_>,
    cols: Range<usize>,
    width: usize,
    panel: &mut P,
    acts: &[A],
    fill: PanelFill<P>,
    multiply: PanelMultiply<P, A>,
) {
    let (n, rb) = (job.w.n(), job.w.row_bytes());
    let bytes = job.w.bytes();
    for j0 in cols.step_by(width) {
        let count = width.min(n - j0);
        // SAFETY: the caller's promise; the panel holds rows `j0 .. j0 + count < n` of the
        // weight, and the output columns `j0 .. j0 + count` are within `cols`.
        unsafe {
            fill(ty, &bytes[j0 * rb..(j0 + count) * rb], count, panel);
            let bias = job.bias.map(|b| &b[j0..j0 + count]);
            multiply(ty, panel, acts, bias, job.out.add(j0), n);
        }
    }
}

// SAFETY: the output pointer is only written through disjoint column ranges, one per task
// (see `product`); the rest is shared references.
unsafe impl Sync for Job<'_, '_> {}

/// `out = x Wᵀ (+ bias)` for each quantized `(w, bias, out)` of `jobs` (all `k` wide).
///
/// # Safety
/// As `matmul`'s `product`: every `out` is writable for `m · n` floats (its weight's `n`) and
/// nothing else touches them during the call; `x` is `m` rows of `k` floats (`k` every
/// weight's width), each bias `n` long; every weight is quantized and [`super::supported`].
pub(crate) unsafe fn product(
    isa: Isa,
    x: &[f32],
    m: usize,
    jobs: &[(&WeightView<'_>, Option<&[f32]>, *mut f32)],
) {
    let Some(k) = jobs.first().map(|(w, ..)| w.k()) else {
        return;
    };
    if m == 0 {
        return;
    }
    let types: Vec<QuantType> = jobs.iter().filter_map(|(w, ..)| w.quant()).collect();
    assert_eq!(types.len(), jobs.len(), "quant::product: a float weight");
    let legacy = types.iter().any(|t| !t.is_k());
    let act = if legacy {
        Act::new(isa, x, m, k)
    } else {
        Act::default()
    };
    let kact = if types.iter().any(|t| t.is_k()) {
        k_act(x, m, k)
    } else {
        Vec::new()
    };
    let rows: Vec<ActRow<'_>> = if legacy {
        (0..m).map(|r| act.row(r)).collect()
    } else {
        Vec::new()
    };
    let kernel = Kernel::of(isa);
    let jobs: Vec<Job<'_, '_>> = jobs
        .iter()
        .map(|&(w, bias, out)| Job { w, bias, out })
        .collect();
    let threads = rayon::current_num_threads();
    let mut tasks = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let n = job.w.n();
        if n > 0 {
            let p = panels(kernel, types[i], m, job.w.row_bytes());
            let t = if threads > 1 && p != Panels::Tiles {
                // At least one panel per thread while there are panels enough: a short
                // product (a few rows) is still shared.
                let w = p.width();
                panel_tasks(m, n, k, w).max(threads.min(n.div_ceil(w)))
            } else {
                split::tasks(m, n, k, job.w.row_bytes(), threads)
            };
            tasks.extend(split::ranges(n, t).into_iter().map(|r| (i, r)));
        }
    }
    let kblocks = k / 256;
    let run = |t: usize| {
        let (i, cols) = tasks[t].clone();
        let job = &jobs[i];
        let (n, rb) = (job.w.n(), job.w.row_bytes());
        let ty = types[i];
        let bytes = job.w.bytes();
        #[cfg(target_arch = "x86_64")]
        let p = panels(kernel, ty, m, rb);
        // Each panel kind's `by_panels` call is sound because `panels` chose the kind only
        // for a CPU that has its instructions (`Kernel::of`: AVX-512 VNNI; `amx::enabled`
        // for AMX; AVX2, with `vnni` only where the CPU has AVX-VNNI) and a type and row size it takes (`fits`,
        // `takes`); `rows` holds `m` activation rows padded to groups of 8 blocks
        // (`Act::new`) and `kact` `m` whole rows of `kblocks` Q8_K blocks; the output columns
        // `cols` of every row are this task's (disjoint ranges, per the function's contract),
        // and the bias (when given) holds `n` values.
        #[cfg(target_arch = "x86_64")]
        match p {
            Panels::Tiles => {}
            Panels::Avx512 if ty.is_k() => {
                let mut panel = k::panel::Panel::new(ty, kblocks);
                let acts = &kact[..m * kblocks];
                let (fill, multiply) = (k::panel::fill, k::panel::multiply);
                let width = k::panel::PANEL;
                // SAFETY: see above.
                unsafe { by_panels(ty, job, cols, width, &mut panel, acts, fill, multiply) };
                return;
            }
            Panels::Avx512 | Panels::Amx => {
                let mut panel = super::panel::Panel::new(k / 32);
                let fill = super::panel::fill;
                let multiply = match p {
                    Panels::Amx => super::amx::multiply,
                    _ => super::panel::multiply,
                };
                let width = super::panel::PANEL;
                // SAFETY: see above.
                unsafe { by_panels(ty, job, cols, width, &mut panel, &rows, fill, multiply) };
                return;
            }
            Panels::Avx2 { .. } if ty.is_k() => {
                let mut panel = k::panel_avx2::Panel::new(ty, kblocks);
                let acts = &kact[..m * kblocks];
                let (fill, multiply) = (k::panel_avx2::fill, k::panel_avx2::multiply);
                let width = super::panel_avx2::PANEL;
                // SAFETY: see above.
                unsafe { by_panels(ty, job, cols, width, &mut panel, acts, fill, multiply) };
                return;
            }
            Panels::Avx2 { vnni } => {
                let mut panel = super::panel_avx2::Panel::new(k / 32, vnni);
                let (fill, multiply) = (super::panel_avx2::fill, super::panel_avx2::multiply);
                let width = super::panel_avx2::PANEL;
                // SAFETY: see above.
                unsafe { by_panels(ty, job, cols, width, &mut panel, &rows, fill, multiply) };
                return;
            }
        }
        let mut sums = [0f32; TILE_ROWS];
        // Prefill: a chunk of weight rows (a few KB, kept in L1) against every tile of
        // activation rows, so each output row's chunk is written contiguously.
        for chunk in cols.step_by(CHUNK).map(|j| j..(j + CHUNK).min(n)) {
            for r0 in (0..m).step_by(TILE_ROWS) {
                let tile = TILE_ROWS.min(m - r0);
                for j in chunk.clone() {
                    let w_row = &bytes[j * rb..(j + 1) * rb];
                    if ty.is_k() {
                        let acts = &kact[r0 * kblocks..(r0 + tile) * kblocks];
                        if tile == 1 {
                            sums[0] = k::dot_row(isa, ty, w_row, acts);
                        } else {
                            k::dot_rows(isa, ty, w_row, acts, &mut sums[..tile]);
                        }
                    } else {
                        dot_rows(kernel, ty, w_row, &rows[r0..r0 + tile], &mut sums[..tile]);
                    }
                    for (r, &s) in (r0..r0 + tile).zip(&sums) {
                        let v = match job.bias {
                            Some(b) => s + b[j],
                            None => s,
                        };
                        // SAFETY: `r < m`, `j < n`: inside this job's `[m, n]` output, which
                        // only this task writes at column `j` (the tasks' column ranges are
                        // disjoint), per the function's contract.
                        unsafe { job.out.add(r * n + j).write(v) };
                    }
                }
            }
        }
    };
    crate::team::for_each(tasks.len(), &run);
}

/// The Q8_K blocks of the `m` activation rows (`k / 256` a row), rows split between the
/// kernels' team (each block's bytes are the same however they are split).
fn k_act(x: &[f32], m: usize, k: usize) -> Vec<BlockQ8K> {
    let blocks = k / 256;
    let mut out = vec![BlockQ8K::ZERO; m * blocks];
    if blocks == 0 {
        return out;
    }
    // About 256 blocks (a few tens of microseconds) a task.
    let rows = 256usize.div_ceil(blocks);
    crate::team::for_each_chunk(&mut out, rows * blocks, &|i, piece| {
        for (r, row) in piece.chunks_exact_mut(blocks).enumerate() {
            let at = (i * rows + r) * k;
            let mut acts = Vec::with_capacity(blocks);
            k::quantize_act(&x[at..at + k], &mut acts);
            row.copy_from_slice(&acts);
        }
    });
    out
}
