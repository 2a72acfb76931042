//! Prefill's AVX2 panel kernel for the K-quants: not written yet, so [`takes`] refuses every
//! type and the driver keeps the K-quants on the tile kernels on AVX2.

use super::q8k::BlockQ8K;
use crate::quant::QuantType;

/// An (empty) panel.
pub(crate) struct Panel;

impl Panel {
    /// An empty panel.
    pub(crate) fn new(_ty: QuantType, _blocks: usize) -> Panel {
        Panel
    }
}

/// Whether the panel kernel takes `ty`: none yet.
pub(crate) fn takes(_ty: QuantType) -> bool {
    false
}

/// Does nothing (never called: [`takes`] refuses every type).
///
/// # Safety
/// None needed.
pub(crate) unsafe fn fill(_ty: QuantType, _w: &[u8], _rows: usize, _panel: &mut Panel) {}

/// Does nothing (never called: [`takes`] refuses every type).
///
/// # Safety
/// None needed.
pub(crate) unsafe fn multiply(
    _ty: QuantType,
    _panel: &Panel,
    _acts: &[BlockQ8K],
    _bias: Option<&[f32]>,
    _out: *mut f32,
    _n: usize,
) {
}
