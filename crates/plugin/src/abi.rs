//! The `#[repr(C)]` types and `extern "C"` signatures that cross the plugin boundary, version
//! [`ABI_VERSION`]. See the [module documentation](super) for the protocol.
//!
//! Every struct that one side fills and the other reads starts with `struct_size`, set by the
//! side that fills it to `size_of` of the struct as that side knows it; the reader checks that
//! it is at least the size it expects before reading any other field. [`AbiStr`],
//! [`AbiValue`] and [`AbiArg`] are plain data laid out inside those structs and carry no size.

use core::ffi::c_void;

/// The version of the plugin ABI this build speaks. A plugin built for another version is
/// refused before anything else of it is read.
pub const ABI_VERSION: u32 = 1;

/// Name of the symbol every plugin exports: `extern "C" fn() -> u32` returning the ABI
/// version it was built for (NUL-terminated, as `dlsym` wants it).
pub const ABI_VERSION_SYMBOL: &[u8] = b"sieve_plugin_abi_version\0";

/// Name of the plugin's entry symbol: an [`EntryFn`] (NUL-terminated).
pub const ENTRY_SYMBOL: &[u8] = b"sieve_plugin_entry\0";

/// Status: success.
pub const STATUS_OK: i32 = 0;
/// Status: the stage failed (a message says why).
pub const STATUS_FAILED: i32 = 1;
/// Status: an argument was rejected; the report names the parameter.
pub const STATUS_INVALID_ARGUMENT: i32 = 2;
/// Status: the plugin panicked; the panic was caught and nothing unwound.
pub const STATUS_PANICKED: i32 = 3;
/// Status: a struct the plugin received was smaller than it needs, or malformed.
pub const STATUS_ABI_MISMATCH: i32 = 4;
/// Status: the stage panicked on an earlier call and refuses to run on a state that may be
/// half-updated.
pub const STATUS_POISONED: i32 = 5;

/// Value kind tags of [`AbiValue::kind`]. `0` is never a valid kind.
pub mod kind {
    /// [`sieve_core::Value::Int`]: `int` holds it.
    pub const INT: u32 = 1;
    /// [`sieve_core::Value::Float`]: `float` holds it (`±inf` included).
    pub const FLOAT: u32 = 2;
    /// [`sieve_core::Value::Bool`]: `int` is 0 or 1.
    pub const BOOL: u32 = 3;
    /// [`sieve_core::Value::Str`]: `ptr`/`len` are UTF-8 bytes (not NUL-terminated).
    pub const STR: u32 = 4;
    /// [`sieve_core::Value::List`]: `ptr` points at `len` [`super::AbiValue`]s.
    pub const LIST: u32 = 5;
    /// [`sieve_core::Value::Map`]: `ptr` points at `2 * len` [`super::AbiValue`]s, key then value,
    /// in written order.
    pub const MAP: u32 = 6;
}

/// Parameter kind tags of [`AbiParam::kind`], mirroring [`crate::ParamKind`].
pub mod param_kind {
    /// [`crate::ParamKind::Float`].
    pub const FLOAT: u32 = 1;
    /// [`crate::ParamKind::Int`].
    pub const INT: u32 = 2;
    /// [`crate::ParamKind::Bool`].
    pub const BOOL: u32 = 3;
    /// [`crate::ParamKind::Str`].
    pub const STR: u32 = 4;
    /// [`crate::ParamKind::List`].
    pub const LIST: u32 = 5;
    /// [`crate::ParamKind::Map`].
    pub const MAP: u32 = 6;
}

/// A borrowed byte string: `len` bytes at `ptr` (UTF-8 wherever it holds text; not
/// NUL-terminated, so it may contain NUL). `ptr` may be null when `len` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiStr {
    /// First byte.
    pub ptr: *const u8,
    /// Number of bytes.
    pub len: usize,
}

impl AbiStr {
    /// A view of `s`, valid as long as `s` is.
    pub fn new(s: &str) -> Self {
        AbiStr::from_bytes(s.as_bytes())
    }
    /// A view of `bytes`, valid as long as `bytes` is.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        AbiStr {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }
    /// The empty string.
    pub const fn empty() -> Self {
        AbiStr {
            ptr: core::ptr::null(),
            len: 0,
        }
    }
    /// The bytes.
    ///
    /// # Safety
    /// `ptr` must point at `len` readable bytes (or `len` be 0) that stay valid and unchanged
    /// for `'a`.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        if self.len == 0 || self.ptr.is_null() {
            &[]
        } else {
            // SAFETY: the caller promises `len` readable bytes at `ptr` for `'a`.
            unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// One argument value (a [`crate::Value`]) as a tagged tree; see [`kind`] for which fields
/// each kind uses. Unused fields are zero / null.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiValue {
    /// One of the [`kind`] constants.
    pub kind: u32,
    /// The integer (`INT`), or 0/1 (`BOOL`).
    pub int: i64,
    /// The float (`FLOAT`).
    pub float: f64,
    /// Bytes (`STR`) or the first element (`LIST`, `MAP`).
    pub ptr: *const c_void,
    /// Byte count (`STR`), element count (`LIST`) or entry count (`MAP`).
    pub len: usize,
}

/// One named argument of a stage.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiArg {
    /// The parameter name.
    pub name: AbiStr,
    /// Its value.
    pub value: AbiValue,
}

/// One parameter of a stage's schema, mirroring [`crate::ParamSpec`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiParam {
    /// `size_of::<AbiParam>()` as the plugin knows it.
    pub struct_size: usize,
    /// The name used in `name=value`.
    pub name: AbiStr,
    /// One of the [`param_kind`] constants.
    pub kind: u32,
    /// 1 when `default` holds the default, 0 when the parameter is required.
    pub has_default: u8,
    /// 1 when the `range_*` fields hold the valid range.
    pub has_range: u8,
    /// 1 when `range_min` itself is allowed.
    pub range_min_inclusive: u8,
    /// 1 when `range_max` itself is allowed.
    pub range_max_inclusive: u8,
    /// The default (when `has_default` is 1).
    pub default: AbiValue,
    /// Lower bound (may be `-inf`).
    pub range_min: f64,
    /// Upper bound (may be `inf`).
    pub range_max: f64,
    /// One line for `sieve samplers`.
    pub doc: AbiStr,
}

/// The vocabulary of the model in use, given to `create`: token `i`'s bytes are
/// `token_bytes[token_offsets[i] .. token_offsets[i + 1]]`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiVocab {
    /// `size_of::<AbiVocab>()` as the host knows it.
    pub struct_size: usize,
    /// Number of tokens.
    pub n_tokens: usize,
    /// Every token's bytes, concatenated in id order.
    pub token_bytes: *const u8,
    /// `n_tokens + 1` offsets into `token_bytes`, non-decreasing, the first 0.
    pub token_offsets: *const usize,
    /// The end-of-sequence ids.
    pub eos: *const u32,
    /// Number of end-of-sequence ids.
    pub n_eos: usize,
}

/// What `create` may read besides the arguments.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiBuild {
    /// `size_of::<AbiBuild>()` as the host knows it.
    pub struct_size: usize,
    /// The run's seed (`--seed`), for stages whose `seed` argument is `-1`.
    pub seed: u64,
    /// The vocabulary, or null when none is loaded (`sieve apply`, `sieve check`).
    pub vocab: *const AbiVocab,
}

/// The candidates of one step, given to `apply` to edit in place.
///
/// On entry `len` candidates: token `ids[i]` has logit `logits[i]`; when `ids` is null the
/// candidates are *dense*: candidate `i` is token `i` and `len == vocab_size`, and `ids_out`
/// points at `len` writable ids. On return `len` is the new count (at most the old one) and
/// the surviving candidates are the first `len` entries of `logits` with their ids in `ids`
/// (sparse input), or — dense input — either still dense (`dense_out = 1`, token `i` at
/// position `i`) or listed in `ids_out` (`dense_out = 0`). Logits written must not be NaN or
/// `+inf` (the host reads NaN as `-inf` and `+inf` as `f32::MAX`, as it does at load).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiCandidates {
    /// `size_of::<AbiCandidates>()` as the host knows it.
    pub struct_size: usize,
    /// Token ids (null for dense candidates).
    pub ids: *mut u32,
    /// Logits, editable.
    pub logits: *mut f32,
    /// In: the number of candidates; out: the number kept.
    pub len: usize,
    /// Size of the vocabulary the ids come from.
    pub vocab_size: usize,
    /// Dense input only: room for `len` ids, for a stage that keeps a subset.
    pub ids_out: *mut u32,
    /// In: 1 when the candidates are in descending logit order, ties by ascending id.
    pub sorted: u8,
    /// Out (dense input only): 1 when the kept candidates are still dense.
    pub dense_out: u8,
    /// Out: the position of the selected candidate (selectors), or -1.
    pub selected: i64,
}

/// What `apply` may read besides the candidates.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiStep {
    /// `size_of::<AbiStep>()` as the host knows it.
    pub struct_size: usize,
    /// Every token so far: the prompt, then the generated tokens.
    pub history: *const u32,
    /// Length of `history`.
    pub history_len: usize,
    /// How many of `history`'s first tokens are the prompt.
    pub prompt_len: usize,
    /// Index of this step among the generated tokens.
    pub step: usize,
}

/// Called by the plugin to report why a call failed: `code` is a status, `param` the
/// parameter at fault (empty when none), `message` UTF-8 text. The host copies what it
/// needs before returning; the plugin keeps ownership of both strings.
pub type ReportFn =
    unsafe extern "C" fn(ctx: *mut c_void, code: i32, param: AbiStr, message: AbiStr);

/// Where a plugin reports an error: the host's `report` function and its context.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ErrorSink {
    /// `size_of::<ErrorSink>()` as the host knows it.
    pub struct_size: usize,
    /// Passed back to `report` untouched.
    pub ctx: *mut c_void,
    /// Receives the report.
    pub report: ReportFn,
}

/// Builds a stage's state from validated arguments; null on failure (reported to `err`).
pub type CreateFn = unsafe extern "C" fn(
    args: *const AbiArg,
    n_args: usize,
    build: *const AbiBuild,
    err: *const ErrorSink,
) -> *mut c_void;
/// Runs the stage on one step's candidates; a status.
pub type ApplyFn = unsafe extern "C" fn(
    state: *mut c_void,
    candidates: *mut AbiCandidates,
    step: *const AbiStep,
    err: *const ErrorSink,
) -> i32;
/// Passes the chosen token to the stage; a status.
pub type AcceptFn =
    unsafe extern "C" fn(state: *mut c_void, token: u32, err: *const ErrorSink) -> i32;
/// Returns the stage to its freshly built state; a status.
pub type ResetFn = unsafe extern "C" fn(state: *mut c_void, err: *const ErrorSink) -> i32;
/// Frees a state made by `create`; must not be called twice.
pub type DestroyFn = unsafe extern "C" fn(state: *mut c_void);

/// One stage a plugin defines: its description, schema and functions.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiStage {
    /// `size_of::<AbiStage>()` as the plugin knows it.
    pub struct_size: usize,
    /// The name used in pipelines.
    pub name: AbiStr,
    /// One line for `sieve samplers`.
    pub doc: AbiStr,
    /// The parameters, in positional order: an array whose stride is the first element's
    /// `struct_size` (every element has the same).
    pub params: *const AbiParam,
    /// Number of parameters.
    pub n_params: usize,
    /// 1 when the stage selects the token.
    pub selector: u8,
    /// See [`CreateFn`].
    pub create: CreateFn,
    /// See [`ApplyFn`].
    pub apply: ApplyFn,
    /// See [`AcceptFn`].
    pub accept: AcceptFn,
    /// See [`ResetFn`].
    pub reset: ResetFn,
    /// See [`DestroyFn`].
    pub destroy: DestroyFn,
}

/// What the entry symbol returns: the plugin and its stages. Lives as long as the library
/// stays loaded and never changes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AbiPlugin {
    /// `size_of::<AbiPlugin>()` as the plugin knows it.
    pub struct_size: usize,
    /// The ABI version, again ([`ABI_VERSION`]).
    pub abi_version: u32,
    /// The plugin's name.
    pub name: AbiStr,
    /// The plugin's version.
    pub version: AbiStr,
    /// The stages: an array whose stride is the first element's `struct_size` (every element
    /// has the same).
    pub stages: *const AbiStage,
    /// Number of stages.
    pub n_stages: usize,
}

/// The ABI-version symbol's type.
pub type AbiVersionFn = unsafe extern "C" fn() -> u32;
/// The entry symbol's type: the descriptor, or null with a report to `err`.
pub type EntryFn = unsafe extern "C" fn(err: *const ErrorSink) -> *const AbiPlugin;
