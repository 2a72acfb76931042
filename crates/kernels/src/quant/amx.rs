//! Prefill's legacy-type kernel on AMX-INT8 (Intel Sapphire Rapids and later): the VNNI
//! panel's integer sums for 16 activation rows at once, from one tile product per block.
//!
//! The AVX-512 VNNI panel ([`super::panel`]) holds 16 weight rows unpacked across the lanes:
//! register `e` of block `b` has, in lane `j`, bytes `4e .. 4e + 4` of block `b` of weight row
//! `j`. Four such registers, 64 bytes apart, are exactly an AMX `B` tile of 4 rows of 64
//! bytes for `tdpbsud` (signed `A` times unsigned `B`): its `C[m][j] += Σ_k Σ_i a[m][4k+i] ·
//! w_j[4k+i]`. With `A` = the block's 16 activation bytes `0..16` (then `16..32`) of 16
//! activation rows, two `tdpbsud` leave in row `m` of `C` the exact integer sum
//! `Σ u_j · q_m` of block `b` for all 16 weight rows, the very value 8 `vpdpbusd` per
//! activation row leave in the VNNI panel. Integer sums are exact in any order, so adding the
//! offset term ([`start_sum`]) and running the same float formula ([`contribution`]) per
//! block in the same block order ([`store_rows`]) gives the scalar reference's bits: AMX
//! changes the speed, never an output.
//!
//! The tile unit needs the process's permission (Linux `arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)`, asked once by [`supported`]) and a tile configuration per thread,
//! loaded at the start of each [`multiply`] and released at its end. Activation rows that do
//! not fill a tile of 16 (or are not evenly spaced in memory) go to the VNNI panel.
//!
//! **Off unless asked for** (`SIEVE_AMX=1` in the environment, [`enabled`]): on the one AMX
//! machine measured (docs/quant.md), the tiles gave the same bits but were no faster than
//! the VNNI panels at SmolLM2's shapes, and a whole prefill was slower with them. Per block
//! the contract's float formula, not the integer products, is most of the work, and each
//! tile product's sums go through memory (`tilestored`, then a load per activation row)
//! before it can start.
//!
//! # Safety
//! The entry points run only where [`supported`] said yes: AMX-TILE and AMX-INT8, the OS
//! state for them, and AVX-512 F/BW/VL/DQ with VNNI, AVX2, FMA and F16C (AMX CPUs have all).

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::act::{qs_at, ActRow};
use super::avx2::{offset_shift, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use super::panel::{contribution, start_sum, store_rows, Panel, PANEL, PER_BLOCK};
use super::QuantType;

/// Activation rows a tile product serves (`A`'s and `C`'s rows).
pub(crate) const TILE: usize = 16;

/// Set by the tests to run the AMX panels where the CPU has them without `SIEVE_AMX=1` (the
/// bits are the same either way).
#[cfg(test)]
pub(crate) static FORCE_AMX: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether products take the AMX panels: `SIEVE_AMX=1` is set (read once) and the CPU has
/// them ([`supported`]).
pub(crate) fn enabled() -> bool {
    static OPTED_IN: OnceLock<bool> = OnceLock::new();
    #[cfg(test)]
    if FORCE_AMX.load(std::sync::atomic::Ordering::Relaxed) {
        return supported();
    }
    *OPTED_IN.get_or_init(|| std::env::var("SIEVE_AMX").is_ok_and(|v| v == "1")) && supported()
}

/// Whether this process can run the AMX-INT8 panels: the CPU reports AMX-TILE and AMX-INT8,
/// the OS enabled their register state (`XCR0` bits 17 and 18), Linux granted the process
/// the tile data (`arch_prctl`), and AVX-512 VNNI is there. Asked once, then cached.
pub(crate) fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512vnni")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
            && cpu_has_amx_int8()
            && request_tile_data()
    })
}

/// CPUID leaf 7: AMX-TILE (EDX bit 24) and AMX-INT8 (bit 25); and the OS saves their state
/// (`XCR0` bits 17 XTILECFG and 18 XTILEDATA, read with `xgetbv` where OSXSAVE is set).
fn cpu_has_amx_int8() -> bool {
    let leaf7 = __cpuid_count(7, 0);
    let tiles = (leaf7.edx >> 24) & 3 == 3;
    let osxsave = (__cpuid_count(1, 0).ecx >> 27) & 1 == 1;
    if !(tiles && osxsave) {
        return false;
    }
    // SAFETY: `xgetbv` exists where CPUID reports OSXSAVE (checked above).
    let xcr0 = unsafe { xgetbv0() };
    (xcr0 >> 17) & 3 == 3
}

/// `XCR0` (`xgetbv` with `ecx = 0`).
///
/// # Safety
/// The CPU has OSXSAVE.
unsafe fn xgetbv0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller's promise; `xgetbv` reads a register and writes edx:eax.
    unsafe {
        asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Asks Linux for the tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`,
/// for the whole process); without it the first tile instruction faults. Other systems: no.
fn request_tile_data() -> bool {
    #[cfg(target_os = "linux")]
    {
        const SYS_ARCH_PRCTL: i64 = 158;
        const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
        const XFEATURE_XTILEDATA: i64 = 18;
        let ret: i64;
        // SAFETY: the `arch_prctl` system call with these arguments only changes which
        // register state the kernel lets this process use; `syscall` clobbers rcx and r11.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => ret,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The tile configuration (palette 1): `tmm0`/`tmm1` the activation bytes `0..16` / `16..32`
/// of a block for 16 rows (16 × 16 bytes); `tmm2`/`tmm3` the panel's registers `0..4` / `4..8`
/// of the block (4 × 64 bytes); `tmm4` the sums (16 × 16 `i32`).
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    /// See the type's docs.
    const fn new() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1;
        // `colsb` (bytes a row, u16 at 16 + 2t) and `rows` (u8 at 48 + t) of tile `t`.
        let shapes: [(u16, u8); 5] = [(16, 16), (16, 16), (64, 4), (64, 4), (64, 16)];
        let mut t = 0;
        while t < shapes.len() {
            let colsb = shapes[t].0.to_le_bytes();
            c[16 + 2 * t] = colsb[0];
            c[16 + 2 * t + 1] = colsb[1];
            c[48 + t] = shapes[t].1;
            t += 1;
        }
        TileConfig(c)
    }
}

/// One tile product's sums: row `m` is activation row `m`'s 16 lanes (weight rows).
#[repr(C, align(64))]
struct Sums([[i32; PANEL]; TILE]);

/// `out[r · n + j] = ` the dot product of activation row `r` with the panel's row `j` (plus
/// `bias[j]`), for every `r < rows.len()` and `j <` the panel's rows: as
/// [`super::panel::multiply`], whose bits it gives, with AMX tiles for each 16 rows.
///
/// # Safety
/// [`supported`] returned true; otherwise as [`super::panel::multiply`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(crate) unsafe fn multiply(
    ty: QuantType,
    panel: &Panel,
    rows: &[ActRow<'_>],
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    /// One type: the tiles, then the rest on the VNNI panel.
    ///
    /// # Safety
    /// As `multiply`.
    #[inline(always)]
    unsafe fn run<const T: u8>(
        ty: QuantType,
        panel: &Panel,
        rows: &[ActRow<'_>],
        bias: Option<&[f32]>,
        out: *mut f32,
        n: usize,
    ) {
        let config = TileConfig::new();
        let mut done = 0;
        // SAFETY: `supported` (the caller's promise) means the CPU and OS run tile
        // instructions; the configuration is valid for palette 1 and released below.
        unsafe { asm!("ldtilecfg [{}]", in(reg) config.0.as_ptr(), options(nostack)) };
        while done + TILE <= rows.len() {
            let group = &rows[done..done + TILE];
            let Some(spacing) = spacing(group) else {
                break;
            };
            // SAFETY: forwarded contract; rows `done ..` write from row `done` of `out`.
            unsafe { tile_amx::<T>(panel, group, spacing, bias, out.add(done * n), n) };
            done += TILE;
        }
        // SAFETY: no tile register is used past here.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
        if done < rows.len() {
            // SAFETY: forwarded contract (AMX CPUs have the VNNI panel's features).
            unsafe { super::panel::multiply(ty, panel, &rows[done..], bias, out.add(done * n), n) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe {
        match ty {
            QuantType::Q4_0 => run::<Q4_0>(ty, panel, rows, bias, out, n),
            QuantType::Q4_1 => run::<Q4_1>(ty, panel, rows, bias, out, n),
            QuantType::Q5_0 => run::<Q5_0>(ty, panel, rows, bias, out, n),
            QuantType::Q5_1 => run::<Q5_1>(ty, panel, rows, bias, out, n),
            _ => run::<Q8_0>(ty, panel, rows, bias, out, n),
        }
    }
}

/// The byte distance between consecutive rows' quants when all of `group` are evenly spaced
/// in one buffer (rows of one `Act`, as the driver gives them), else `None`.
fn spacing(group: &[ActRow<'_>]) -> Option<usize> {
    let at = |r: usize| group[r].qs.as_ptr() as usize;
    let step = at(1).checked_sub(at(0))?;
    (1..group.len())
        .all(|r| at(r) == at(0) + r * step && group[r].qs.len() == group[0].qs.len())
        .then_some(step)
}

/// [`TILE`] activation rows, `spacing` bytes apart, against the panel (type code `T`).
///
/// # Safety
/// As [`multiply`], with its features enabled and the tile configuration loaded;
/// `rows.len() == TILE`; row `r`'s quants start `r · spacing` bytes after row 0's.
// The activation rows index the sums and the class sums in the loops' order.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn tile_amx<const T: u8>(
    panel: &Panel,
    rows: &[ActRow<'_>],
    spacing: usize,
    bias: Option<&[f32]>,
    out: *mut f32,
    n: usize,
) {
    let nb = panel.blocks;
    assert!(rows.len() == TILE && panel.rows >= 1 && panel.regs.len() == nb * PER_BLOCK);
    // Lanes and quants are stored by whole groups of 8 blocks (`act`).
    let padded = nb.div_ceil(8) * 8;
    for a in rows {
        assert!(
            a.d.len() >= padded
                && a.s.len() >= padded
                && a.sum.len() >= padded
                && a.qs.len() >= padded * 32
        );
    }
    let shift = offset_shift(T, true);
    let mut sums = Sums([[0; PANEL]; TILE]);
    // SAFETY: the tile loads read, for 16 rows `spacing` bytes apart, 16 bytes at
    // `qs_at(b, 0)` and `qs_at(b, 16)` of each row's quants (inside its first `padded`
    // blocks, asserted), and 4 × 64 bytes of block `b`'s panel registers (`b < nb`); the
    // store writes `sums`; the rest reads the panel and the rows inside those bounds; the
    // features and the tile configuration are the caller's.
    unsafe {
        let regs = panel.regs.as_ptr();
        let q0 = rows[0].qs.as_ptr();
        let mut class = [[_mm512_setzero_ps(); 8]; TILE];
        for c in 0..8 {
            let mut acc = [_mm512_setzero_ps(); TILE];
            let mut b = c;
            while b < nb {
                let p = regs.add(b * PER_BLOCK);
                asm!(
                    "tilezero tmm4",
                    "tileloadd tmm0, [{lo} + {stride} * 1]",
                    "tileloadd tmm1, [{hi} + {stride} * 1]",
                    "tileloadd tmm2, [{w_lo} + {wide} * 1]",
                    "tileloadd tmm3, [{w_hi} + {wide} * 1]",
                    "tdpbsud tmm4, tmm0, tmm2",
                    "tdpbsud tmm4, tmm1, tmm3",
                    "tilestored [{sums} + {wide} * 1], tmm4",
                    lo = in(reg) q0.add(qs_at(b, 0)),
                    hi = in(reg) q0.add(qs_at(b, 16)),
                    stride = in(reg) spacing,
                    w_lo = in(reg) p,
                    w_hi = in(reg) p.add(4),
                    wide = in(reg) 64usize,
                    sums = in(reg) sums.0.as_mut_ptr(),
                    options(nostack),
                );
                for r in 0..TILE {
                    let dot = _mm512_load_si512(sums.0[r].as_ptr().cast());
                    let isum = _mm512_add_epi32(start_sum(&rows[r], b, shift), dot);
                    acc[r] = _mm512_add_ps(acc[r], contribution::<T>(p, &rows[r], b, isum));
                }
                b += 8;
            }
            for r in 0..TILE {
                class[r][c] = acc[r];
            }
        }
        store_rows(&class, panel.rows, bias, out, n);
    }
}
