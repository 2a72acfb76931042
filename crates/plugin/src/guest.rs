//! The plugin author's side: the `extern "C"` functions and the descriptor that
//! [`crate::export_plugin!`] exports for each [`Stage`].
//!
//! Every exported function runs its body under [`std::panic::catch_unwind`]: a panic becomes
//! [`STATUS_PANICKED`] with the panic message and location, reported through the host's
//! [`ErrorSink`]; nothing unwinds into the host. (This needs the plugin to be built with
//! `panic = "unwind"`, Rust's default; under `panic = "abort"` a panic ends the process.)
//! A stage that panicked is *poisoned*: its state may be half-updated, so later `apply`,
//! `accept` calls fail with [`STATUS_POISONED`] until a `reset` completes.
//!
//! Panics inside these guarded calls are not printed by the plugin (the host reports them);
//! panics elsewhere in the plugin go to the panic hook that was installed before.

use std::boxed::Box;
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::format;
use std::panic::{self, AssertUnwindSafe};
use std::string::{String, ToString};
use std::sync::{Once, OnceLock};
use std::vec::Vec;

use crate::abi::{
    AbiBuild, AbiCandidates, AbiParam, AbiPlugin, AbiStage, AbiStep, AbiStr, AcceptFn, ApplyFn,
    CreateFn, DestroyFn, ErrorSink, ResetFn, ABI_VERSION, STATUS_ABI_MISMATCH, STATUS_FAILED,
    STATUS_INVALID_ARGUMENT, STATUS_OK, STATUS_PANICKED, STATUS_POISONED,
};
use crate::schema::encode_param;
use crate::value::{decode_args, Arena};
use crate::vocab::decode_vocab;
use sieve_core::{BuildContext, Candidates, Context, Error, ParamSpec, Params, Stage, Vocab};

/// One stage's entry in an [`Export`]: made by [`stage`].
#[derive(Debug, Clone, Copy)]
pub struct StageDef {
    name: &'static str,
    doc: &'static str,
    selector: bool,
    params: fn() -> Vec<ParamSpec>,
    create: CreateFn,
    apply: ApplyFn,
    accept: AcceptFn,
    reset: ResetFn,
    destroy: DestroyFn,
}

/// The [`StageDef`] of stage type `S`.
pub const fn stage<S: Stage>() -> StageDef {
    StageDef {
        name: S::NAME,
        doc: S::DOC,
        selector: S::SELECTOR,
        params: <S::Params as Params>::schema,
        create: create::<S>,
        apply: apply::<S>,
        accept: accept::<S>,
        reset: reset::<S>,
        destroy: destroy::<S>,
    }
}

/// Everything a plugin exports, as a `static` the entry symbol returns; the descriptor is
/// built on the first call and kept for the life of the library.
#[derive(Debug)]
pub struct Export {
    name: &'static str,
    version: &'static str,
    stages: &'static [StageDef],
    built: OnceLock<Built>,
}

/// The descriptor and everything it points into.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) plugin: AbiPlugin,
    _stages: Box<[AbiStage]>,
    _params: Vec<Box<[AbiParam]>>,
    _specs: Vec<Vec<ParamSpec>>,
    _arena: Arena,
}

// SAFETY: `Built` is never changed after it is made; its raw pointers point only into its
// own heap buffers and `'static` strings, which every thread may read.
unsafe impl Send for Built {}
// SAFETY: as above.
unsafe impl Sync for Built {}

impl Export {
    /// A plugin called `name`, version `version`, defining `stages`.
    pub const fn new(
        name: &'static str,
        version: &'static str,
        stages: &'static [StageDef],
    ) -> Self {
        Export {
            name,
            version,
            stages,
            built: OnceLock::new(),
        }
    }

    /// What the entry symbol returns: the descriptor, or null after reporting to `err` (when
    /// building it panicked).
    pub fn entry(&'static self, err: *const ErrorSink) -> *const AbiPlugin {
        install_hook();
        guard(err, || {
            let built = self
                .built
                .get_or_init(|| build(self.name, self.version, self.stages));
            Ok(&built.plugin as *const AbiPlugin)
        })
        .unwrap_or(core::ptr::null())
    }
}

/// The descriptor of a plugin `name`, version `version`, defining `stages` (what
/// [`Export::entry`] returns, and what [`crate::testing::check_descriptor`] checks).
pub(crate) fn build(name: &'static str, version: &'static str, stages: &[StageDef]) -> Built {
    let specs: Vec<Vec<ParamSpec>> = stages.iter().map(|s| (s.params)()).collect();
    let mut arena = Arena::new();
    let params: Vec<Box<[AbiParam]>> = specs
        .iter()
        .map(|list| list.iter().map(|p| encode_param(p, &mut arena)).collect())
        .collect();
    let abi_stages: Box<[AbiStage]> = stages
        .iter()
        .zip(&params)
        .map(|(s, p)| AbiStage {
            struct_size: core::mem::size_of::<AbiStage>(),
            name: AbiStr::new(s.name),
            doc: AbiStr::new(s.doc),
            params: p.as_ptr(),
            n_params: p.len(),
            selector: u8::from(s.selector),
            create: s.create,
            apply: s.apply,
            accept: s.accept,
            reset: s.reset,
            destroy: s.destroy,
        })
        .collect();
    let plugin = AbiPlugin {
        struct_size: core::mem::size_of::<AbiPlugin>(),
        abi_version: ABI_VERSION,
        name: AbiStr::new(name),
        version: AbiStr::new(version),
        stages: abi_stages.as_ptr(),
        n_stages: abi_stages.len(),
    };
    Built {
        plugin,
        _stages: abi_stages,
        _params: params,
        _specs: specs,
        _arena: arena,
    }
}

/// Why a guarded call failed: a status, the parameter at fault, a message.
struct Failure {
    code: i32,
    param: String,
    message: String,
}

impl Failure {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            param: String::new(),
            message: message.into(),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let invalid = |param: String, message: String| Failure {
            code: STATUS_INVALID_ARGUMENT,
            param,
            message,
        };
        match e {
            Error::InvalidArgument { param, message, .. } => invalid(param, message),
            Error::WrongType {
                param,
                expected,
                found,
                ..
            } => invalid(param, format!("must be {expected}, found {found}")),
            Error::MissingArgument { param, .. } => invalid(param, "missing argument".into()),
            Error::Stage { message, .. } => Failure::new(STATUS_FAILED, message),
            other => Failure::new(STATUS_FAILED, other.to_string()),
        }
    }
}

thread_local! {
    /// Whether this thread is inside a guarded call (its panics are reported, not printed).
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// Where the last guarded panic happened.
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs (once) a panic hook that records where a guarded panic happened instead of
/// printing it, and hands every other panic to the previous hook.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Sends `failure` to the host's sink (if the sink is usable).
fn report(err: *const ErrorSink, failure: &Failure) {
    if err.is_null() {
        return;
    }
    // SAFETY: `err` is non-null and the host promises it points at a sink at least a `usize`
    // long; the whole sink is read only once its size is checked.
    let sink = unsafe {
        if err.cast::<usize>().read() < core::mem::size_of::<ErrorSink>() {
            return;
        }
        *err
    };
    // SAFETY: the host's `report` accepts its own `ctx` and borrowed strings valid for the
    // call.
    unsafe {
        (sink.report)(
            sink.ctx,
            failure.code,
            AbiStr::new(&failure.param),
            AbiStr::new(&failure.message),
        );
    }
}

/// Runs `body` catching panics; a failure or panic is reported to `err` and gives `None`.
fn guard<T>(err: *const ErrorSink, body: impl FnOnce() -> Result<T, Failure>) -> Option<T> {
    install_hook();
    let was_guarded = GUARDED.with(|g| g.replace(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(body));
    GUARDED.with(|g| g.set(was_guarded));
    let failure = match outcome {
        Ok(Ok(value)) => return Some(value),
        Ok(Err(failure)) => failure,
        Err(payload) => {
            let text = panic_text(&*payload);
            // Dropping the payload could itself panic; keep it from unwinding.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            let at = PANIC_AT.with(|p| p.borrow_mut().take());
            let message = match at {
                Some(at) => format!("{text} (at {at})"),
                None => text,
            };
            Failure::new(STATUS_PANICKED, message)
        }
    };
    report(err, &failure);
    None
}

/// [`guard`] for calls that return a status.
fn guard_status(err: *const ErrorSink, body: impl FnOnce() -> Result<(), Failure>) -> i32 {
    let mut code = STATUS_OK;
    let wrapped = || body().inspect_err(|f| code = f.code);
    match guard(err, wrapped) {
        Some(()) => STATUS_OK,
        None if code == STATUS_OK => STATUS_PANICKED,
        None => code,
    }
}

/// Copies `*ptr` after checking its leading `struct_size`.
///
/// # Safety
/// `ptr` must be null or point at a struct whose first field is its `struct_size` and that is
/// at least that many bytes long.
unsafe fn read_sized<T: Copy>(ptr: *const T, what: &str) -> Result<T, Failure> {
    if ptr.is_null() {
        return Err(Failure::new(STATUS_ABI_MISMATCH, format!("null {what}")));
    }
    // SAFETY: non-null; every ABI struct starts with its `usize` size (caller's promise).
    let size = unsafe { ptr.cast::<usize>().read() };
    if size < core::mem::size_of::<T>() {
        return Err(Failure::new(
            STATUS_ABI_MISMATCH,
            format!(
                "the host's {what} is {size} bytes, this plugin needs {}",
                core::mem::size_of::<T>()
            ),
        ));
    }
    // SAFETY: at least `size_of::<T>()` bytes (checked).
    Ok(unsafe { ptr.read() })
}

/// `len` elements at `ptr`, empty when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` must point at `len` initialized elements valid (and not otherwise
/// accessed) for `'a`.
unsafe fn parts<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::new(STATUS_ABI_MISMATCH, format!("null {what}")));
    }
    // SAFETY: forwarded from the caller.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// A built stage with what it needs between calls.
struct State<S> {
    sampler: S,
    vocab: Option<Vocab>,
    scratch: Candidates,
    poisoned: bool,
}

const POISONED: &str = "the stage panicked on an earlier call; reset or build it again";

/// `create` of stage `S`.
///
/// # Safety
/// `args` must point at `n_args` arguments valid as [`decode_args`] requires, `build` at an
/// [`AbiBuild`] (with a valid vocabulary or null), `err` be null or a valid sink.
unsafe extern "C" fn create<S: Stage>(
    args: *const crate::abi::AbiArg,
    n_args: usize,
    build: *const AbiBuild,
    err: *const ErrorSink,
) -> *mut c_void {
    guard(err, || {
        // SAFETY: the host's promise, as documented on this function.
        let args = unsafe { decode_args(S::NAME, args, n_args) }
            .map_err(|e| Failure::new(STATUS_ABI_MISMATCH, e.to_string()))?;
        // SAFETY: as above.
        let build = unsafe { read_sized(build, "build context")? };
        let vocab = if build.vocab.is_null() {
            None
        } else {
            // SAFETY: as above.
            let abi = unsafe { read_sized(build.vocab, "vocabulary")? };
            // SAFETY: as above.
            Some(
                unsafe { decode_vocab(&abi) }
                    .map_err(|e| Failure::new(STATUS_ABI_MISMATCH, e.to_string()))?,
            )
        };
        let params = <S::Params as Params>::from_args(&args)?;
        let cx = BuildContext {
            seed: build.seed,
            vocab: vocab.as_ref(),
        };
        let sampler = S::new(params, &cx)?;
        let state = Box::new(State {
            sampler,
            vocab,
            scratch: Candidates::new(),
            poisoned: false,
        });
        Ok(Box::into_raw(state).cast::<c_void>())
    })
    .unwrap_or(core::ptr::null_mut())
}

/// The state behind `state`, unless it is null or poisoned.
///
/// # Safety
/// `state` must be null or come from `create::<S>` and not be destroyed, nor used by another
/// call at the same time.
unsafe fn state<'a, S>(state: *mut c_void) -> Result<&'a mut State<S>, Failure> {
    if state.is_null() {
        return Err(Failure::new(STATUS_ABI_MISMATCH, "null stage state"));
    }
    // SAFETY: forwarded from the caller.
    let st = unsafe { &mut *state.cast::<State<S>>() };
    if st.poisoned {
        return Err(Failure::new(STATUS_POISONED, POISONED));
    }
    Ok(st)
}

/// `apply` of stage `S`.
///
/// # Safety
/// `state` as for [`state`]; `candidates` must point at an [`AbiCandidates`] whose arrays
/// hold `len` elements as documented there; `step` at an [`AbiStep`] whose history holds
/// `history_len` ids; `err` be null or a valid sink.
unsafe extern "C" fn apply<S: Stage>(
    state_ptr: *mut c_void,
    candidates: *mut AbiCandidates,
    step: *const AbiStep,
    err: *const ErrorSink,
) -> i32 {
    guard_status(err, || {
        // SAFETY: the host's promise, as documented on this function.
        let st = unsafe { state::<S>(state_ptr)? };
        // SAFETY: as above.
        let header = unsafe { read_sized(candidates.cast_const(), "candidates")? };
        // SAFETY: as above; the size is checked, and nothing else refers to it now.
        let c = unsafe { &mut *candidates };
        // SAFETY: as above.
        let step = unsafe { read_sized(step, "step")? };
        let n = header.len;
        // SAFETY: `len` logits, and `history_len` ids (host's promise).
        let (logits, history) = unsafe {
            (
                parts(header.logits, n, "logits")?,
                &*parts(step.history.cast_mut(), step.history_len, "history")?,
            )
        };
        let dense = header.ids.is_null();
        if dense && header.ids_out.is_null() && n > 0 {
            return Err(Failure::new(
                STATUS_ABI_MISMATCH,
                "dense candidates without ids_out",
            ));
        }
        if dense {
            st.scratch.load(logits);
            st.scratch.set_vocab_size(header.vocab_size);
        } else {
            // SAFETY: `len` ids (host's promise).
            let ids = unsafe { parts(header.ids, n, "ids")? };
            st.scratch.load_sparse(ids, logits, header.vocab_size)?;
        }
        st.scratch.set_sorted(header.sorted != 0);
        let cx = Context {
            history,
            prompt_len: step.prompt_len,
            vocab: st.vocab.as_ref(),
            step: step.step,
        };
        st.poisoned = true;
        st.sampler.apply(&mut st.scratch, &cx)?;
        st.poisoned = false;

        let kept = st.scratch.len();
        if kept > n {
            return Err(Failure::new(
                STATUS_FAILED,
                format!("the stage grew the candidates from {n} to {kept}"),
            ));
        }
        if dense && st.scratch.is_dense() {
            logits[..kept].copy_from_slice(st.scratch.logits());
            c.dense_out = 1;
        } else {
            let target = if dense { header.ids_out } else { header.ids };
            // SAFETY: `ids_out` (dense) or `ids` holds `len >= kept` writable ids.
            let ids_dst = unsafe { parts(target, kept, "ids")? };
            ids_dst.copy_from_slice(st.scratch.ids());
            logits[..kept].copy_from_slice(st.scratch.logits());
            c.dense_out = 0;
        }
        c.len = kept;
        c.selected = st.scratch.selected().map_or(-1, |i| i as i64);
        Ok(())
    })
}

/// `accept` of stage `S`.
///
/// # Safety
/// As [`state`]; `err` null or a valid sink.
unsafe extern "C" fn accept<S: Stage>(
    state_ptr: *mut c_void,
    token: u32,
    err: *const ErrorSink,
) -> i32 {
    guard_status(err, || {
        // SAFETY: the host's promise, as documented on this function.
        let st = unsafe { state::<S>(state_ptr)? };
        st.poisoned = true;
        st.sampler.accept(token);
        st.poisoned = false;
        Ok(())
    })
}

/// `reset` of stage `S`: also clears a poisoned state once the stage's reset completes.
///
/// # Safety
/// As [`state`]; `err` null or a valid sink.
unsafe extern "C" fn reset<S: Stage>(state_ptr: *mut c_void, err: *const ErrorSink) -> i32 {
    guard_status(err, || {
        if state_ptr.is_null() {
            return Err(Failure::new(STATUS_ABI_MISMATCH, "null stage state"));
        }
        // SAFETY: the host's promise, as documented on this function.
        let st = unsafe { &mut *state_ptr.cast::<State<S>>() };
        st.poisoned = true;
        st.sampler.reset();
        st.poisoned = false;
        Ok(())
    })
}

/// `destroy` of stage `S`: drops the state; a panic while dropping is caught and dropped.
///
/// # Safety
/// `state_ptr` must be null or come from `create::<S>`, and not be used again.
unsafe extern "C" fn destroy<S: Stage>(state_ptr: *mut c_void) {
    if state_ptr.is_null() {
        return;
    }
    install_hook();
    let was_guarded = GUARDED.with(|g| g.replace(true));
    // SAFETY: the host's promise, as documented on this function.
    let state = unsafe { Box::from_raw(state_ptr.cast::<State<S>>()) };
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(state))) {
        let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
    }
    PANIC_AT.with(|p| p.borrow_mut().take());
    GUARDED.with(|g| g.set(was_guarded));
}
