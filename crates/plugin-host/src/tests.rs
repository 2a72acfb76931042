//! The whole boundary in one process: a plugin exported with `sieve_plugin::export_plugin!` in
//! this test binary, loaded through its two symbols with [`Plugin::from_symbols`], built and
//! run through the registry like a library plugin.

use std::boxed::Box;
use std::string::String;
use std::vec;
use std::vec::Vec;

use crate::{LoadFailure, Plugin};
use sieve_core::{Registry, StageEntry, StageInfo};
use sieve_plugin::abi::{AbiPlugin, ErrorSink, ABI_VERSION};
use sieve_plugin::{
    Args, BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage, Value, Vocab,
};

/// A stage whose behaviour `mode` picks, to drive every path of the boundary.
struct Probe {
    mode: String,
    by: f32,
    accepted: Vec<u32>,
    vocab: Option<Vocab>,
}

#[derive(Params)]
struct ProbeParams {
    /// what to do
    #[param(default = "shift")]
    mode: String,
    /// shift
    #[param(default = 1.0, range = Range::closed(-10.0, 10.0))]
    by: f32,
}

impl Sampler for Probe {
    fn apply(&mut self, c: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
        match self.mode.as_str() {
            // Dense in, dense out.
            "shift" => c.logits_mut().iter_mut().for_each(|x| *x += self.by),
            // Keeps a subset.
            "keep_even" => c.retain(|id, _| id % 2 == 0),
            "pick_last" => c.select(c.len() - 1),
            "panic" => panic!("probe was told to panic"),
            "fail" => {
                return Err(Error::Stage {
                    stage: "probe".into(),
                    message: "no luck".into(),
                })
            }
            "bad_values" => {
                let l = c.logits_mut();
                l[0] = f32::NAN;
                l[1] = f32::INFINITY;
            }
            // Every logit becomes a digest of what the stage sees.
            "context" => {
                let seen = (cx.history.len() * 1000 + cx.prompt_len * 100 + cx.step) as f32;
                let accepted = self.accepted.len() as f32;
                let vocab = self.vocab.as_ref().map_or(-1.0, |v| v.len() as f32);
                let sorted = if c.is_sorted() { 1.0 } else { 0.0 };
                let l = c.logits_mut();
                l[0] = seen;
                l[1] = accepted;
                l[2] = vocab;
                l[3] = sorted;
                l[4] = cx.vocab.map_or(-1.0, |v| v.eos().len() as f32);
            }
            "grow" => c.load(&[0.0; 64]),
            other => unreachable!("mode {other} was checked at create"),
        }
        Ok(())
    }
    fn accept(&mut self, token: u32) {
        assert!(token != 666, "the devil's token");
        self.accepted.push(token);
    }
    fn reset(&mut self) {
        self.accepted.clear();
    }
}

const MODES: [&str; 9] = [
    "shift",
    "keep_even",
    "pick_last",
    "panic",
    "fail",
    "bad_values",
    "context",
    "grow",
    "panic_create",
];

impl Stage for Probe {
    type Params = ProbeParams;
    const NAME: &'static str = "probe";
    const DOC: &'static str = "a test stage";
    fn new(p: ProbeParams, cx: &BuildContext<'_>) -> Result<Self, Error> {
        if p.mode == "panic_create" {
            panic!("create was told to panic");
        }
        if !MODES.contains(&p.mode.as_str()) {
            return Err(Error::InvalidArgument {
                stage: "probe".into(),
                param: "mode".into(),
                message: std::format!("unknown mode {:?}", p.mode),
            });
        }
        Ok(Probe {
            mode: p.mode,
            by: p.by,
            accepted: Vec::new(),
            vocab: cx.vocab.cloned(),
        })
    }
}

/// A selector, to check the selector flag and a second stage.
struct First;

impl Sampler for First {
    fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        c.select(0);
        Ok(())
    }
}

/// `first` has no parameters.
#[derive(Params)]
struct NoParams {}

impl Stage for First {
    type Params = NoParams;
    const NAME: &'static str = "first";
    const DOC: &'static str = "selects the first candidate";
    const SELECTOR: bool = true;
    fn new(_: NoParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(First)
    }
}

sieve_plugin::export_plugin!(
    name = "probe-plugin",
    version = "1.2.3",
    stages = [Probe, First]
);

extern "C" {
    fn sieve_plugin_abi_version() -> u32;
    fn sieve_plugin_entry(err: *const ErrorSink) -> *const AbiPlugin;
}

/// The descriptor the macro exported.
pub(crate) fn descriptor() -> &'static AbiPlugin {
    // SAFETY: the macro's entry function, which returns a descriptor valid for the process.
    unsafe { &*sieve_plugin_entry(core::ptr::null()) }
}

fn plugin() -> Plugin {
    // SAFETY: the macro's two functions, in this binary.
    unsafe { Plugin::from_symbols("in-process", sieve_plugin_abi_version, sieve_plugin_entry) }
        .unwrap()
}

fn registry() -> Registry {
    let mut r = Registry::new();
    plugin().register(&mut r).unwrap();
    r
}

fn args(mode: &str) -> Args {
    Args::new(
        "probe",
        vec![
            ("mode".into(), Value::Str(mode.into())),
            ("by".into(), Value::Float(1.0)),
        ],
    )
}

fn build(mode: &str) -> Result<Box<dyn Sampler>, Error> {
    registry().build("probe", &args(mode), &BuildContext::default())
}

/// The error of a build that must fail.
fn build_error(r: Result<Box<dyn Sampler>, Error>) -> Error {
    match r {
        Ok(_) => panic!("the build succeeded"),
        Err(e) => e,
    }
}

fn run(mode: &str, c: &mut Candidates, cx: &Context<'_>) -> Result<(), Error> {
    build(mode).unwrap().apply(c, cx)
}

#[test]
fn the_descriptor_describes_both_stages() {
    let p = plugin();
    assert_eq!(
        (p.name(), p.version(), p.origin()),
        ("probe-plugin", "1.2.3", "in-process")
    );
    let infos: Vec<&StageInfo> = p.stages().collect();
    assert_eq!(infos.len(), 2);
    let mut want = StageInfo::builtin("probe", "a test stage", ProbeParams::schema());
    want.origin = "in-process".into();
    want.plugin = Some(sieve_core::PluginOrigin {
        name: "probe-plugin".into(),
        version: "1.2.3".into(),
        file: "in-process".into(),
    });
    assert_eq!(infos[0], &want);
    assert!(infos[1].selector && infos[1].params.is_empty());
    assert_eq!(descriptor().abi_version, ABI_VERSION);
}

#[test]
fn dense_candidates_stay_dense() {
    let mut c = Candidates::from_logits(&[0.5, 1.0, -f32::INFINITY]);
    run("shift", &mut c, &Context::default()).unwrap();
    assert!(c.is_dense());
    assert_eq!(
        c.iter().collect::<Vec<_>>(),
        [(0, 1.5), (1, 2.0), (2, f32::NEG_INFINITY)]
    );
}

#[test]
fn kept_subsets_come_back_with_their_ids() {
    let mut c = Candidates::from_logits(&[0.0, 1.0, 2.0, 3.0, 4.0]);
    run("keep_even", &mut c, &Context::default()).unwrap();
    assert!(!c.is_dense() && !c.is_sorted());
    assert_eq!(c.iter().collect::<Vec<_>>(), [(0, 0.0), (2, 2.0), (4, 4.0)]);
    // Sparse in, sparse out.
    let mut c = Candidates::from_sparse(vec![7, 4, 9, 2], vec![1.0, 2.0, 3.0, 4.0], 10).unwrap();
    run("keep_even", &mut c, &Context::default()).unwrap();
    assert_eq!(c.iter().collect::<Vec<_>>(), [(4, 2.0), (2, 4.0)]);
    assert_eq!(c.vocab_size(), 10);
}

#[test]
fn a_pending_scale_is_applied_before_the_plugin_sees_the_logits() {
    let mut c = Candidates::from_logits(&[1.0, 2.0]);
    c.scale_logits(2.0);
    run("shift", &mut c, &Context::default()).unwrap();
    assert_eq!(c.iter().collect::<Vec<_>>(), [(0, 3.0), (1, 5.0)]);
}

#[test]
fn selections_cross_back() {
    let mut c = Candidates::from_sparse(vec![3, 1, 2], vec![0.0; 3], 4).unwrap();
    run("pick_last", &mut c, &Context::default()).unwrap();
    assert_eq!(c.selected_id(), Some(2));
    let r = registry();
    let mut first = r
        .build(
            "first",
            &Args::new("first", vec![]),
            &BuildContext::default(),
        )
        .unwrap();
    let mut c = Candidates::from_logits(&[0.0, 5.0]);
    first.apply(&mut c, &Context::default()).unwrap();
    assert_eq!(c.selected_id(), Some(0));
}

#[test]
fn a_selection_made_before_a_plugin_stage_does_not_survive_it() {
    let mut c = Candidates::from_logits(&[0.0, 1.0]);
    c.sort_desc();
    c.select(1);
    run("shift", &mut c, &Context::default()).unwrap();
    assert_eq!(c.selected(), None);
    assert!(!c.is_sorted());
}

#[test]
fn the_stage_sees_history_prompt_step_vocabulary_and_accepted_tokens() {
    let vocab = Vocab::new(vec![b"a".to_vec(); 6], vec![5, 4]);
    let r = registry();
    let cx = BuildContext {
        seed: 0,
        vocab: Some(&vocab),
    };
    let mut stage = r.build("probe", &args("context"), &cx).unwrap();
    stage.accept(3);
    stage.accept(4);
    let history = [1, 2, 3];
    let step = Context {
        history: &history,
        prompt_len: 2,
        vocab: None,
        step: 7,
    };
    let mut c = Candidates::from_logits(&[9.0, 8.0, 7.0, 6.0, 5.0, 4.0]);
    c.sort_desc();
    stage.apply(&mut c, &step).unwrap();
    let logits: Vec<f32> = c.iter().map(|(_, l)| l).collect();
    // history 3 → 3000, prompt 2 → 200, step 7; two accepted; 6 tokens; sorted; 2 EOS ids
    // (the plugin's context carries the vocabulary it got at create).
    assert_eq!(&logits[..5], [3207.0, 2.0, 6.0, 1.0, 2.0]);
    stage.reset();
    stage.apply(&mut c, &step).unwrap();
    assert_eq!(c.logit(1), 0.0, "reset forgot the accepted tokens");
}

#[test]
fn without_a_vocabulary_the_stage_sees_none() {
    let mut c = Candidates::from_logits(&[0.0; 5]);
    run("context", &mut c, &Context::default()).unwrap();
    assert_eq!(c.logit(2), -1.0);
    assert_eq!(c.logit(4), -1.0);
}

#[test]
fn nan_and_inf_written_by_a_plugin_are_read_as_at_load() {
    let mut c = Candidates::from_logits(&[0.0, 0.0, 1.0]);
    run("bad_values", &mut c, &Context::default()).unwrap();
    assert_eq!(
        c.iter().collect::<Vec<_>>(),
        [(0, f32::NEG_INFINITY), (1, f32::MAX), (2, 1.0)]
    );
}

#[test]
fn a_panic_in_apply_is_an_error_and_poisons_the_stage() {
    let mut stage = build("panic").unwrap();
    let mut c = Candidates::from_logits(&[0.0, 1.0]);
    let err = stage.apply(&mut c, &Context::default()).unwrap_err();
    let Error::Stage {
        stage: name,
        message,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(name, "probe");
    assert!(
        message.starts_with("plugin in-process panicked in apply: probe was told to panic (at ")
            && message.contains("tests.rs"),
        "{message}"
    );
    let err = stage.apply(&mut c, &Context::default()).unwrap_err();
    assert!(
        err.to_string().contains("panicked on an earlier call"),
        "{err}"
    );
}

#[test]
fn a_panic_in_create_is_an_error() {
    let err = build_error(build("panic_create"));
    let text = err.to_string();
    assert!(
        text.starts_with(
            "stage `probe`: plugin in-process panicked in create: create was told to panic"
        ),
        "{text}"
    );
}

#[test]
fn a_panic_in_accept_is_reported_by_the_next_apply_and_cleared_by_reset() {
    let mut stage = build("shift").unwrap();
    stage.accept(666);
    let mut c = Candidates::from_logits(&[0.0]);
    let err = stage.apply(&mut c, &Context::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("panicked in accept: the devil's token"),
        "{err}"
    );
    // Still poisoned: the panic may have left the state half-updated.
    assert!(stage.apply(&mut c, &Context::default()).is_err());
    stage.reset();
    stage.apply(&mut c, &Context::default()).unwrap();
    assert_eq!(c.logit(0), 1.0);
}

#[test]
fn rejected_arguments_name_the_parameter() {
    let err = build_error(build("dance"));
    assert_eq!(
        err,
        Error::InvalidArgument {
            stage: "probe".into(),
            param: "mode".into(),
            message: "unknown mode \"dance\" (plugin in-process)".into()
        }
    );
    // A value of another type than the parameter struct's field.
    let args = Args::new(
        "probe",
        vec![
            ("mode".into(), Value::Str("shift".into())),
            ("by".into(), Value::Str("x".into())),
        ],
    );
    let err = build_error(registry().build("probe", &args, &BuildContext::default()));
    let Error::InvalidArgument { param, message, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(param, "by");
    assert_eq!(
        message,
        "must be a number, found a string (plugin in-process)"
    );
}

#[test]
fn stage_errors_and_contract_breaches_are_errors() {
    let mut c = Candidates::from_logits(&[0.0]);
    let err = run("fail", &mut c, &Context::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage `probe`: no luck (plugin in-process, in apply)"
    );
    let mut c = Candidates::from_logits(&[0.0, 1.0]);
    let err = run("grow", &mut c, &Context::default()).unwrap_err();
    assert!(
        err.to_string().contains("grew the candidates from 2 to 64"),
        "{err}"
    );
}

#[test]
fn a_taken_name_refuses_the_whole_plugin() {
    let mut r = Registry::new();
    r.register(StageEntry::new(
        StageInfo::builtin("first", "", vec![]),
        |_, _| unreachable!(),
    ))
    .unwrap();
    let err = plugin().register(&mut r).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage `first` is defined twice: by built-in and by in-process"
    );
    assert!(
        r.get("probe").is_none(),
        "nothing of the plugin was registered"
    );
    let mut r = registry();
    let err = plugin().register(&mut r).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage `probe` is defined twice: by in-process and by in-process"
    );
}

/// A test `sieve_plugin_abi_version` of an unknown version.
///
/// # Safety
/// None: it reads nothing (`unsafe` only to match `sieve_plugin::abi::AbiVersionFn`).
unsafe extern "C" fn version_99() -> u32 {
    99
}

/// A test entry point that must never run.
///
/// # Safety
/// None: it ignores its argument and aborts (`unsafe` only to match `sieve_plugin::abi::EntryFn`).
unsafe extern "C" fn entry_never_called(_: *const ErrorSink) -> *const AbiPlugin {
    // The host must refuse the version before calling the entry.
    std::process::abort()
}

/// A test entry point that returns no plugin.
///
/// # Safety
/// None: it ignores its argument (`unsafe` only to match `sieve_plugin::abi::EntryFn`).
unsafe extern "C" fn entry_null(_: *const ErrorSink) -> *const AbiPlugin {
    core::ptr::null()
}

#[test]
fn another_abi_version_is_refused_before_the_entry_is_called() {
    // SAFETY: the entry function is never called.
    let err =
        unsafe { Plugin::from_symbols("old.so", version_99, entry_never_called) }.unwrap_err();
    assert_eq!(
        err.reason,
        LoadFailure::AbiMismatch {
            found: 99,
            expected: ABI_VERSION
        }
    );
    assert_eq!(
        err.to_string(),
        std::format!(
            "plugin old.so: built for sieve plugin ABI v99, this sieve speaks v{ABI_VERSION}; \
             rebuild the plugin against this sieve-plugin"
        )
    );
    // SAFETY: a version function and an entry returning null.
    let err =
        unsafe { Plugin::from_symbols("x.so", sieve_plugin_abi_version, entry_null) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin x.so: its entry function failed: failed with status -1 and no message"
    );
}
