//! The scale searches llama.cpp's reference quantizers run on each sub-block
//! (`ggml-quants.c`: `make_qx_quants`, `make_q3_quants`, `make_qkx2_quants`), restated so that
//! every float operation happens in the same order on `f32` (no fused multiply-add), which is
//! what makes our quantized bytes equal llama.cpp's.
//!
//! Each takes a sub-block `x` and writes its integer levels into `levels`; the returned `f32`
//! is the sub-block's scale (and, for the asymmetric search, its min).

use super::common::nearest_int;

/// Below this absolute maximum a sub-block counts as all zero (GGML's `GROUP_MAX_EPS`).
pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

/// Symmetric levels in `0..2·nmax` (`l + nmax` for `l` in `−nmax..nmax`) with the scale
/// chosen by a weighted least-squares search over 19 trial inverse scales, weights `x²`
/// (`make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL)`). Returns the scale (negative
/// when the largest magnitude is positive, as GGML's is).
pub(crate) fn make_qx_quants(nmax: i32, x: &[f32], levels: &mut [i8]) -> f32 {
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        levels.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let mut iscale = (-nmax) as f32 / max;
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for (i, &v) in x.iter().enumerate() {
        let l = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
        levels[i] = (l + nmax) as i8;
        let w = v * v;
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &v in x {
            let l = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
            let w = v * v;
            sumlx += w * v * l as f32;
            suml2 += w * l as f32 * l as f32;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (i, &v) in x.iter().enumerate() {
                let l = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
                levels[i] = (nmax + l) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// Symmetric levels in `0..2·nmax` refined by up to 5 rounds of coordinate descent on the
/// `x²`-weighted error (`make_q3_quants(n, nmax, x, L, do_rmse = true)`). Returns the scale.
pub(crate) fn make_q3_quants(nmax: i32, x: &[f32], levels: &mut [i8]) -> f32 {
    let mut max = 0f32;
    let mut amax = 0f32;
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        levels.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let iscale = (-nmax) as f32 / max;
    let mut sumlx = 0f32;
    let mut suml2 = 0f32;
    for (i, &v) in x.iter().enumerate() {
        let l = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
        levels[i] = l as i8;
        let w = v * v;
        sumlx += w * v * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for (i, &v) in x.iter().enumerate() {
            let w = v * v;
            let li = levels[i] as f32;
            let mut slx = sumlx - w * v * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != levels[i] as i32 {
                    slx += w * v * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        levels[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    for l in levels.iter_mut() {
        *l += nmax as i8;
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// What [`make_qkx2_quants`] is asked for: the largest level and the trial grid
/// `iscale = (rmin + rdelta·is + nmax) / (max − min)` for `is` in `0..=nstep`, and whether the
/// error is absolute (`use_mad`) or squared.
pub(crate) struct Qkx2 {
    /// Largest level.
    pub nmax: i32,
    /// Grid start.
    pub rmin: f32,
    /// Grid step.
    pub rdelta: f32,
    /// Grid steps.
    pub nstep: i32,
    /// Absolute instead of squared error.
    pub use_mad: bool,
}

/// Asymmetric levels in `0..=nmax` with a scale and a min (`x ≈ scale·l − the_min`, `the_min
/// ≥ 0`) fitted by weighted least squares over a grid of trial inverse scales
/// (`make_qkx2_quants`). `aux` is scratch of `x.len()` levels. Returns `(scale, the_min)`.
pub(crate) fn make_qkx2_quants(
    p: &Qkx2,
    x: &[f32],
    weights: &[f32],
    levels: &mut [u8],
    aux: &mut [u8],
) -> (f32, f32) {
    let n = x.len();
    let nmax = p.nmax;
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        levels.iter_mut().for_each(|l| *l = 0);
        return (0.0, -min);
    }
    let error = |diff: f32| if p.use_mad { diff.abs() } else { diff * diff };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        levels[i] = l as u8;
        let diff = scale * levels[i] as f32 + min - x[i];
        best_error += weights[i] * error(diff);
    }
    if p.nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=p.nstep {
        iscale = (p.rmin + p.rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            aux[i] = l as u8;
            let w = weights[i];
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for i in 0..n {
                let diff = this_scale * aux[i] as f32 + this_min - x[i];
                cur_error += weights[i] * error(diff);
            }
            if cur_error < best_error {
                levels[..n].copy_from_slice(&aux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}
