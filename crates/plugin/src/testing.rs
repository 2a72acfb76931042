//! Helpers for a plugin's own tests (feature `std`): build a stage the way the host does, and
//! check its descriptor as the host will when it loads the library.
//!
//! ```
//! # use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};
//! # #[derive(Params)]
//! # pub struct ShiftParams {
//! #     /// added to every logit
//! #     #[param(default = 0.0, range = Range::closed(-10.0, 10.0))]
//! #     pub by: f32,
//! # }
//! # pub struct Shift { by: f32 }
//! # impl Sampler for Shift {
//! #     fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
//! #         c.logits_mut().iter_mut().for_each(|l| *l += self.by);
//! #         Ok(())
//! #     }
//! # }
//! # impl Stage for Shift {
//! #     const NAME: &'static str = "shift";
//! #     const DOC: &'static str = "add a constant to every logit";
//! #     type Params = ShiftParams;
//! #     fn new(p: ShiftParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
//! #         Ok(Shift { by: p.by })
//! #     }
//! # }
//! use sieve_plugin::testing;
//!
//! // What `sieve` checks when it loads the library: names, kinds, ranges, defaults.
//! let info = testing::check_descriptor::<Shift>().unwrap();
//! assert_eq!(info.params[0].name, "by");
//!
//! // The stage, built through `Stage::new` (never an inherent `Shift::new`).
//! let mut shift: Shift = testing::build(ShiftParams { by: 1.5 }, &BuildContext::default()).unwrap();
//! let mut c = Candidates::from_logits(&[0.0, 1.0]);
//! shift.apply(&mut c, &Context::default()).unwrap();
//! assert_eq!(c.logit(1), 2.5);
//! ```

use std::vec::Vec;

use crate::descriptor::{describe, DescriptorError};
use crate::guest;
use sieve_core::{BuildContext, Error, Stage, StageInfo};

/// Builds stage `T` through the [`Stage`] trait, as the host does: `<T as Stage>::new(params,
/// cx)`.
///
/// Use it in tests instead of `T::new(…)`: an inherent `fn new` on the stage type compiles
/// beside [`Stage::new`] and is the one `T::new` calls, so a test written that way would not
/// test what `sieve` runs.
///
/// # Errors
/// Whatever [`Stage::new`] returns.
pub fn build<T: Stage>(params: T::Params, cx: &BuildContext<'_>) -> Result<T, Error> {
    <T as Stage>::new(params, cx)
}

/// Checks stage `T`'s descriptor exactly as the host will when it loads the library: the
/// descriptor `export_plugin!` would export for `T` is built and read back by
/// [`describe`], the function `sieve-plugin-host` runs on every library it loads. Returns the
/// stage's description (its parameters as `sieve samplers` lists them).
///
/// It catches what the compiler cannot: a default outside its range or of the wrong type
/// when either is not a literal, a name that is not an identifier, two parameters with one
/// name (a `#[param(flatten)]` field repeating one), an unordered or NaN range. Two stages of
/// one library with one name are checked when the library loads (`sieve samplers --plugin`).
///
/// # Errors
/// The [`DescriptorError`] the host would refuse the library with.
///
/// # Panics
/// When `T`'s parameter schema panics.
pub fn check_descriptor<T: Stage>() -> Result<StageInfo, DescriptorError> {
    let built = guest::build("test", "0.0.0", &[guest::stage::<T>()]);
    // SAFETY: `built.plugin` is a descriptor starting with its size, pointing only into
    // `built` and `'static` strings, all alive and unchanged until `built` is dropped; the
    // references `describe` returns are dropped before it.
    let described = unsafe { describe(&built.plugin, core::any::type_name::<T>()) }?;
    let stages: Vec<StageInfo> = described.stages.into_iter().map(|(info, _)| info).collect();
    Ok(stages
        .into_iter()
        .next()
        .expect("the descriptor has the one stage"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Candidates, Context, Params, Range, Sampler};

    /// A stage whose schema only the descriptor check can refuse: its default is not a
    /// literal, so the derive cannot see it is outside the range.
    struct Bad;

    const TWO: f64 = 2.0;

    #[derive(Params)]
    #[allow(dead_code)] // read by the schema only
    struct BadParams {
        /// a probability
        #[param(default = TWO, range = Range::closed(0.0, 1.0))]
        p: f64,
    }

    impl Sampler for Bad {
        fn apply(&mut self, _: &mut Candidates, _: &Context<'_>) -> Result<(), Error> {
            Ok(())
        }
    }

    impl Stage for Bad {
        const NAME: &'static str = "bad";
        const DOC: &'static str = "a bad default";
        type Params = BadParams;
        fn new(_: BadParams, _: &BuildContext<'_>) -> Result<Self, Error> {
            Ok(Bad)
        }
    }

    /// A stage with an inherent `new` beside `Stage::new`.
    struct Twice(u32);

    #[derive(Params)]
    struct TwiceParams {
        /// a count
        #[param(default = 1)]
        n: u32,
    }

    impl Twice {
        #[allow(dead_code)]
        fn new(n: u32) -> Self {
            Twice(n)
        }
    }

    impl Sampler for Twice {
        fn apply(&mut self, _: &mut Candidates, _: &Context<'_>) -> Result<(), Error> {
            Ok(())
        }
    }

    impl Stage for Twice {
        const NAME: &'static str = "twice";
        const DOC: &'static str = "doubles its parameter";
        type Params = TwiceParams;
        fn new(p: TwiceParams, _: &BuildContext<'_>) -> Result<Self, Error> {
            Ok(Twice(2 * p.n))
        }
    }

    #[test]
    fn a_default_outside_its_range_is_refused_as_the_host_refuses_it() {
        let err = check_descriptor::<Bad>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "stage `bad`: parameter `p`: default: `p` = 2.0 is out of range; valid range is [0, 1]"
        );
    }

    #[test]
    fn a_good_descriptor_comes_back_as_the_host_reads_it() {
        let info = check_descriptor::<Twice>().unwrap();
        assert_eq!(info.name, "twice");
        assert_eq!(info.doc, "doubles its parameter");
        assert_eq!(info.params, TwiceParams::schema());
    }

    #[test]
    fn build_goes_through_the_trait() {
        let stage: Twice = build(TwiceParams { n: 3 }, &BuildContext::default()).unwrap();
        assert_eq!(stage.0, 6, "Stage::new doubles; the inherent new does not");
    }
}
