//! Reading a plugin's descriptor into owned, checked descriptions of its stages: the one
//! check of a descriptor, run by the host when it loads a library (`sieve-plugin-host`) and by
//! [`testing::check_descriptor`](crate::testing::check_descriptor) in a plugin's own tests.
//!
//! What is checked: every `struct_size` (and the stride of each array), the ABI version field,
//! every string is UTF-8, stage and parameter names are identifiers and unique, parameter
//! kinds are known, ranges are ordered and not NaN, and each default has its parameter's type
//! and lies in its range ([`decode_param`]).

use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::abi::{AbiParam, AbiPlugin, AbiStage, ABI_VERSION};
use crate::schema::{decode_param, is_identifier};
use crate::value::decode_str;
use crate::AbiError;
use sieve_core::{ParamSpec, StageInfo};

/// What is wrong with a plugin's descriptor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptorError {
    /// The descriptor is smaller than this host's `AbiPlugin`.
    #[error("the descriptor is {size} bytes, expected at least {expected}")]
    TooSmall {
        /// Its `struct_size`.
        size: usize,
        /// `size_of::<AbiPlugin>()`.
        expected: usize,
    },
    /// The descriptor's version field disagrees with the version symbol.
    #[error("the descriptor says ABI v{found}, the version symbol said v{ABI_VERSION}")]
    VersionMismatch {
        /// The descriptor's `abi_version`.
        found: u32,
    },
    /// An array pointer is null although its length is not zero.
    #[error("null {what} array")]
    NullArray {
        /// `stage` or `parameter`.
        what: &'static str,
    },
    /// An array's stride (its first element's `struct_size`) is too small or misaligned.
    #[error("{what} entries are {stride} bytes, expected at least {size} (a multiple of {align})")]
    BadStride {
        /// `stage` or `parameter`.
        what: &'static str,
        /// The first element's `struct_size`.
        stride: usize,
        /// This host's struct size.
        size: usize,
        /// Its alignment.
        align: usize,
    },
    /// An element's `struct_size` differs from the first element's.
    #[error("{what} entry {index} is {own} bytes, the first is {stride}")]
    UnevenStride {
        /// `stage` or `parameter`.
        what: &'static str,
        /// The element's position.
        index: usize,
        /// Its `struct_size`.
        own: usize,
        /// The first element's.
        stride: usize,
    },
    /// A string or parameter that cannot be decoded.
    #[error(transparent)]
    Decode(#[from] AbiError),
    /// A stage name that is not an identifier.
    #[error(
        "stage name {0:?} is not an identifier (letters, digits, `_`; not starting with a digit)"
    )]
    NotAnIdentifier(String),
    /// Two stages with one name.
    #[error("stage `{0}` is defined twice")]
    DuplicateStage(String),
    /// Two parameters of one stage with one name.
    #[error("parameter `{0}` is defined twice")]
    DuplicateParam(String),
    /// What is wrong inside one stage's description.
    #[error("stage `{stage}`: {error}")]
    InStage {
        /// The stage's name.
        stage: String,
        /// What is wrong.
        error: Box<DescriptorError>,
    },
}

impl DescriptorError {
    /// This error, placed in stage `stage`.
    fn in_stage(self, stage: &str) -> Self {
        DescriptorError::InStage {
            stage: stage.to_string(),
            error: Box::new(self),
        }
    }
}

/// What a descriptor says, checked and copied; the stages keep a reference to their entry in
/// the descriptor (for their functions).
#[derive(Debug)]
pub struct Described<'a> {
    /// The plugin's name (`export_plugin!(name = …)`).
    pub name: String,
    /// The plugin's version (`export_plugin!(version = …)`).
    pub version: String,
    /// Each stage's description (origin set, `plugin` left `None` for the caller to fill),
    /// with its entry in the descriptor.
    pub stages: Vec<(StageInfo, &'a AbiStage)>,
}

/// Element `i` of an array of `n` structs whose stride is the first one's `struct_size`.
///
/// # Safety
/// `base` must point at `n` structs laid out with that stride, valid for `'a`.
unsafe fn element<'a, T>(
    base: *const T,
    n: usize,
    i: usize,
    what: &'static str,
) -> Result<&'a T, DescriptorError> {
    if base.is_null() {
        return Err(DescriptorError::NullArray { what });
    }
    debug_assert!(i < n);
    // SAFETY: `n > i >= 0` elements, so the first exists (caller's promise).
    let stride = unsafe { base.cast::<usize>().read() };
    let size = core::mem::size_of::<T>();
    if stride < size || stride % core::mem::align_of::<T>() != 0 {
        return Err(DescriptorError::BadStride {
            what,
            stride,
            size,
            align: core::mem::align_of::<T>(),
        });
    }
    // SAFETY: element `i` starts `i * stride` bytes in, inside the array (caller's promise).
    let ptr = unsafe { base.cast::<u8>().add(i * stride).cast::<T>() };
    // SAFETY: every element has the same size as the first (caller's promise).
    let own = unsafe { ptr.cast::<usize>().read() };
    if own != stride {
        return Err(DescriptorError::UnevenStride {
            what,
            index: i,
            own,
            stride,
        });
    }
    // SAFETY: checked size and alignment; valid for `'a` (caller's promise).
    Ok(unsafe { &*ptr })
}

/// Reads and checks the descriptor at `ptr`, naming the plugin file `origin` in every stage's
/// origin.
///
/// # Errors
/// A [`DescriptorError`] saying what is wrong, placed in its stage.
///
/// # Safety
/// `ptr` must be non-null and point at a descriptor as a plugin's entry function returns it:
/// starting with its `struct_size`, and valid (with everything it points at) and unchanged
/// for `'a`.
pub unsafe fn describe<'a>(
    ptr: *const AbiPlugin,
    origin: &str,
) -> Result<Described<'a>, DescriptorError> {
    // SAFETY: non-null descriptors start with their size (caller's promise).
    let size = unsafe { ptr.cast::<usize>().read() };
    if size < core::mem::size_of::<AbiPlugin>() {
        return Err(DescriptorError::TooSmall {
            size,
            expected: core::mem::size_of::<AbiPlugin>(),
        });
    }
    // SAFETY: size checked; valid for `'a` (caller's promise).
    let plugin: &'a AbiPlugin = unsafe { &*ptr };
    if plugin.abi_version != ABI_VERSION {
        return Err(DescriptorError::VersionMismatch {
            found: plugin.abi_version,
        });
    }
    // SAFETY: strings of a valid descriptor (caller's promise).
    let (name, version) = unsafe {
        (
            decode_str(&plugin.name, "the plugin name")?,
            decode_str(&plugin.version, "the plugin version")?,
        )
    };
    let mut stages = Vec::with_capacity(plugin.n_stages);
    let mut names = BTreeSet::new();
    for i in 0..plugin.n_stages {
        // SAFETY: `n_stages` stages (caller's promise).
        let stage = unsafe { element(plugin.stages, plugin.n_stages, i, "stage")? };
        // SAFETY: as above.
        let info = unsafe { stage_info(stage, origin) }?;
        if !names.insert(info.name.clone()) {
            return Err(DescriptorError::DuplicateStage(info.name));
        }
        stages.push((info, stage));
    }
    Ok(Described {
        name,
        version,
        stages,
    })
}

/// The [`StageInfo`] of one stage.
///
/// # Safety
/// As [`describe`].
unsafe fn stage_info(stage: &AbiStage, origin: &str) -> Result<StageInfo, DescriptorError> {
    // SAFETY: the caller's promise.
    let name = unsafe { decode_str(&stage.name, "a stage name") }?;
    if !is_identifier(&name) {
        return Err(DescriptorError::NotAnIdentifier(name));
    }
    let at = |e: DescriptorError| e.in_stage(&name);
    // SAFETY: the caller's promise.
    let doc = unsafe { decode_str(&stage.doc, "a stage doc") }.map_err(|e| at(e.into()))?;
    let mut params: Vec<ParamSpec> = Vec::with_capacity(stage.n_params);
    for i in 0..stage.n_params {
        // SAFETY: `n_params` parameters (caller's promise).
        let p: &AbiParam =
            unsafe { element(stage.params, stage.n_params, i, "parameter") }.map_err(at)?;
        // SAFETY: the caller's promise.
        let spec = unsafe { decode_param(p) }.map_err(|e| at(e.into()))?;
        if params.iter().any(|q| q.name == spec.name) {
            return Err(at(DescriptorError::DuplicateParam(spec.name)));
        }
        params.push(spec);
    }
    Ok(StageInfo {
        name,
        doc,
        params,
        selector: stage.selector != 0,
        aliases: Vec::new(),
        origin: origin.to_string(),
        plugin: None,
    })
}
