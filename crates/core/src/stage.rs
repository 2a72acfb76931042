//! The one way to define a stage, for built-ins and plugins alike: a [`Sampler`] with a
//! name, a doc line and a typed parameter struct ([`Stage`]), whose schema is derived from
//! the struct once ([`Params`], `#[derive(Params)]`).
//!
//! ```
//! use sieve_core::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};
//!
//! /// The parameters of `shift`: the field name is the parameter name, its doc the
//! /// parameter's doc, a field without `default` is required.
//! #[derive(Params)]
//! pub struct ShiftParams {
//!     /// added to every logit
//!     #[param(default = 0.0, range = Range::closed(-10.0, 10.0))]
//!     pub by: f32,
//! }
//!
//! /// `shift(by)`: adds `by` to every logit.
//! pub struct Shift {
//!     by: f32,
//! }
//!
//! impl Sampler for Shift {
//!     fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
//!         c.logits_mut().iter_mut().for_each(|l| *l += self.by);
//!         Ok(())
//!     }
//! }
//!
//! impl Stage for Shift {
//!     const NAME: &'static str = "shift";
//!     const DOC: &'static str = "add a constant to every logit";
//!     type Params = ShiftParams;
//!     fn new(p: ShiftParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
//!         Ok(Shift { by: p.by })
//!     }
//! }
//!
//! let entry = sieve_core::StageEntry::of::<Shift>();
//! assert_eq!(entry.info.params[0].name, "by");
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use crate::params::{ParamKind, ParamSpec, Range, Value, MAX_SEED};
use crate::Args;
use crate::{BuildContext, Error, Sampler};

/// A stage's typed parameters: the schema (names, kinds, defaults, ranges, docs, in
/// positional order) and the conversion from validated [`Args`].
///
/// Derive it (`#[derive(Params)]`, see [`stage`](crate::stage)) rather than writing it: the
/// derive keeps the schema and the struct in step.
pub trait Params: Sized {
    /// The parameters, in positional order.
    fn schema() -> Vec<ParamSpec>;
    /// Reads the parameters from arguments validated against [`Params::schema`].
    ///
    /// # Errors
    /// [`Error::MissingArgument`], [`Error::WrongType`] or [`Error::InvalidArgument`] when
    /// `args` do not match the schema.
    fn from_args(args: &Args) -> Result<Self, Error>;
}

/// A stage of a pipeline: a [`Sampler`] with the name and doc line it is listed under and
/// its typed parameters. Built-ins and plugins implement it the same way; register one with
/// [`StageEntry::of`](crate::StageEntry::of) (or [`Registry::add`](crate::Registry::add)),
/// export one from a plugin with `sieve_plugin::export_plugin!`.
pub trait Stage: Sampler + Sized + 'static {
    /// The name used in pipelines (letters, digits, `_`): the stage's only name, also in
    /// error messages.
    const NAME: &'static str;
    /// One line for `sieve samplers`.
    const DOC: &'static str;
    /// Whether the stage selects the token (a pipeline that does not end in a selector gets
    /// `dist` appended).
    const SELECTOR: bool = false;
    /// Other names "did you mean" maps to this stage (`temperature` → `temp`); they are not
    /// accepted in pipelines.
    const ALIASES: &'static [&'static str] = &[];
    /// The typed parameters.
    type Params: Params;
    /// Builds the stage.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an argument the stage cannot use (the diagnostic
    /// points at it), or any other [`Error`].
    fn new(params: Self::Params, cx: &BuildContext<'_>) -> Result<Self, Error>;
}

/// A Rust type a parameter field may have, and the [`ParamKind`] it maps to.
///
/// Implemented for `f64`, `f32` (float), `usize`, `u32`, `i64` (int), `bool`, `String`,
/// `Vec<Value>` (list), `Vec<(Value, Value)>` (map) and [`Seed`].
pub trait ParamType: Sized {
    /// The kind the schema declares.
    const KIND: ParamKind;
    /// The doc used when the field has none (only [`Seed`] has one).
    const IMPLICIT_DOC: &'static str = "";
    /// Reads argument `name`.
    ///
    /// # Errors
    /// As [`Params::from_args`].
    fn from_arg(args: &Args, name: &str) -> Result<Self, Error>;
    /// The type a `#[param(default = …)]` expression has: the field type, except `f64` for
    /// `f32` fields (so `default = 0.05` is the `f64` 0.05, exactly as `sieve check` prints
    /// it, not the nearest `f32`), `i64` for the integer fields and [`Seed`].
    type Default;
    /// The schema value of a default.
    fn default_value(default: Self::Default) -> Value;
    /// The default of a field that gives none (`None`: the parameter is required).
    fn implicit_default() -> Option<Value> {
        None
    }
    /// The range of a field that gives none.
    fn implicit_range() -> Option<Range> {
        None
    }
}

macro_rules! param_type {
    ($ty:ty, $kind:ident, $default:ty, $variant:ident, |$args:ident, $name:ident| $read:expr) => {
        impl ParamType for $ty {
            const KIND: ParamKind = ParamKind::$kind;
            type Default = $default;
            fn from_arg($args: &Args, $name: &str) -> Result<Self, Error> {
                $read
            }
            fn default_value(default: $default) -> Value {
                Value::$variant(default)
            }
        }
    };
}

param_type!(f64, Float, f64, Float, |args, name| args.f64(name));
param_type!(f32, Float, f64, Float, |args, name| args.f32(name));
param_type!(i64, Int, i64, Int, |args, name| args.i64(name));
param_type!(usize, Int, i64, Int, |args, name| args.usize(name));
param_type!(u32, Int, i64, Int, |args, name| {
    let i = args.i64(name)?;
    u32::try_from(i).map_err(|_| args.invalid(name, alloc::format!("{i} does not fit in 32 bits")))
});
param_type!(bool, Bool, bool, Bool, |args, name| args.bool(name));
param_type!(String, Str, String, Str, |args, name| args
    .str(name)
    .map(Into::into));
param_type!(Vec<Value>, List, Vec<Value>, List, |args, name| args
    .list(name)
    .map(Into::into));
param_type!(
    Vec<(Value, Value)>,
    Map,
    Vec<(Value, Value)>,
    Map,
    |args, name| args.map(name).map(Into::into)
);

/// The `seed` parameter of a random stage: `-1` (the default) means the run's seed
/// (`--seed`, or the request's); `0..=2^53` is a seed of its own (2^53 is the largest integer
/// every JSON reader keeps exact). Read it with [`Seed::resolve`] in [`Stage::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed(pub i64);

impl Seed {
    /// The seed to use: `run_seed` (the [`BuildContext::seed`]) for `-1`, else the value.
    pub fn resolve(self, run_seed: u64) -> u64 {
        u64::try_from(self.0).unwrap_or(run_seed)
    }
}

impl Default for Seed {
    fn default() -> Self {
        Seed(-1)
    }
}

impl ParamType for Seed {
    const KIND: ParamKind = ParamKind::Int;
    const IMPLICIT_DOC: &'static str = "random seed; -1 uses the run's --seed";
    fn from_arg(args: &Args, name: &str) -> Result<Self, Error> {
        match args.i64(name)? {
            s @ -1..=i64::MAX => Ok(Seed(s)),
            s => Err(args.invalid(name, alloc::format!("{s} is negative"))),
        }
    }
    type Default = i64;
    fn default_value(default: i64) -> Value {
        Value::Int(default)
    }
    fn implicit_default() -> Option<Value> {
        Some(Value::Int(-1))
    }
    fn implicit_range() -> Option<Range> {
        Some(Range::closed(-1.0, MAX_SEED as f64))
    }
}

impl From<i64> for Seed {
    fn from(s: i64) -> Self {
        Seed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use alloc::string::ToString;
    use alloc::vec;

    /// Every supported field type, one of them required and one flattened.
    #[derive(Params, Debug, PartialEq)]
    struct Inner {
        /// shared
        #[param(default = 0.5)]
        shared: f64,
    }

    #[derive(Params, Debug, PartialEq)]
    struct All {
        /// a required count
        #[param(range = Range::at_least(0.0))]
        n: usize,
        /// a float
        /// on two lines
        #[param(default = 1.0, range = Range::closed(0.0, 2.0))]
        x: f32,
        #[param(flatten)]
        inner: Inner,
        /// text
        #[param(default = "a")]
        s: String,
        /// items
        #[param(default = Vec::new())]
        items: Vec<Value>,
        seed: Seed,
    }

    #[test]
    fn the_schema_follows_the_fields() {
        let schema = All::schema();
        let names: Vec<&str> = schema.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["n", "x", "shared", "s", "items", "seed"]);
        assert_eq!(schema[0].default, None);
        assert_eq!(schema[0].kind, ParamKind::Int);
        assert_eq!(schema[1].doc, "a float on two lines");
        assert_eq!(schema[1].default, Some(Value::Float(1.0)));
        assert_eq!(schema[1].range, Some(Range::closed(0.0, 2.0)));
        assert_eq!(schema[3].default, Some(Value::Str("a".to_string())));
        assert_eq!(schema[5], ParamSpec::seed());
    }

    #[test]
    fn from_args_reads_every_field() {
        let args = Args::new(
            "all",
            vec![
                ("n".into(), Value::Int(3)),
                ("x".into(), Value::Float(0.25)),
                ("shared".into(), Value::Float(0.5)),
                ("s".into(), Value::Str("b".into())),
                ("items".into(), Value::List(vec![Value::Int(1)])),
                ("seed".into(), Value::Int(-1)),
            ],
        );
        let all = All::from_args(&args).unwrap();
        assert_eq!(all.n, 3);
        assert_eq!(all.x, 0.25);
        assert_eq!(all.inner, Inner { shared: 0.5 });
        assert_eq!(all.seed.resolve(9), 9);
        assert_eq!(Seed(4).resolve(9), 4);
        let missing = Args::new("all", vec![]);
        assert_eq!(
            All::from_args(&missing),
            Err(Error::MissingArgument {
                stage: "all".into(),
                param: "n".into()
            })
        );
    }
}
