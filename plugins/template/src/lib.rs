//! The smallest working sieve plugin: `mine(bias=1.0, token)` adds `bias` to the logit of
//! token `token` (when it is a candidate). It does what `logit_bias({token: bias})` does, so
//! the two can be timed side by side to measure what crossing the plugin boundary costs.
//!
//! A plugin stage is written exactly like a built-in one (compare `crates/samplers/src/top_k.rs`):
//! a parameter struct, the stage type with [`Sampler`] and [`Stage`], and one export line.
//! See `README.md` beside this crate for the walkthrough (building, installing, debugging).

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// The parameters. Each field is one parameter: its name is the name used in pipelines
/// (`mine(bias=2.5, token=13)`), its `///` line the doc `sieve samplers` shows (required:
/// a field without one does not compile), the field order the positional order
/// (`mine(2.5, 13)`). The host validates every pipeline against this schema (types, ranges,
/// required parameters) before [`Stage::new`] runs. `sieve_plugin::Params` documents every
/// `#[param(…)]` attribute.
///
/// Named `MineParams`, not `Params`: `Params` is the name of the trait and of the derive
/// imported above, and a struct of that name clashes with them (the derive refuses it).
#[derive(Debug, Params)]
pub struct MineParams {
    /// added to the logit
    #[param(default = 1.0, range = Range::closed(-100.0, 100.0))]
    pub bias: f32,
    /// the token id
    // No `default`: the parameter is required, and `mine(2.5)` is an error naming `token`.
    #[param(range = Range::closed(0.0, u32::MAX as f64))]
    pub token: u32,
}

/// The stage: the same [`Sampler`] trait the built-in stages implement.
#[derive(Debug)]
pub struct Mine {
    bias: f32,
    token: u32,
}

impl Sampler for Mine {
    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if let Some(i) = candidates.position(self.token) {
            candidates.set_logit(i, candidates.logit(i) + self.bias);
        }
        Ok(())
    }
}

impl Stage for Mine {
    /// The stage's one name: in pipelines, in `sieve samplers`, in error messages.
    const NAME: &'static str = "mine";
    const DOC: &'static str = "add bias to the logit of one token";
    type Params = MineParams;

    // The one constructor. Do not add an inherent `Mine::new(…)` beside it: it would compile,
    // and `Mine::new` would then call it instead of this one (tests use `testing::build`).
    fn new(p: MineParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Mine {
            bias: p.bias,
            token: p.token,
        })
    }
}

// `name` and `version` describe the library (shown by `sieve samplers` beside the stage).
sieve_plugin::export_plugin!(
    name = "mine",
    version = env!("CARGO_PKG_VERSION"),
    stages = [Mine]
);

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_plugin::{testing, ParamError, Value};

    /// `mine(bias, token)` built as `sieve` builds it: through `Stage::new`.
    fn mine(bias: f32, token: u32) -> Mine {
        testing::build(MineParams { bias, token }, &BuildContext::default()).unwrap()
    }

    #[test]
    fn adds_the_bias_to_one_token() {
        let mut c = Candidates::from_logits(&[0.5, 1.0, 2.0]);
        mine(1.5, 1).apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), [(0, 0.5), (1, 2.5), (2, 2.0)]);
        // A token that is not a candidate: nothing changes.
        mine(1.5, 7).apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.logit(1), 2.5);
    }

    #[test]
    fn sieve_would_load_the_descriptor() {
        // The check `sieve` runs when it loads the library (names, kinds, ranges, defaults).
        let info = testing::check_descriptor::<Mine>().unwrap();
        assert_eq!(info.name, "mine");
        let [bias, token] = &info.params[..] else {
            panic!("{:?}", info.params)
        };
        assert_eq!((bias.name.as_str(), token.name.as_str()), ("bias", "token"));
        assert_eq!(bias.default, Some(Value::Float(1.0)));
        assert!(token.default.is_none(), "token is required");
    }

    #[test]
    fn arguments_outside_the_schema_are_refused() {
        // What the host does with `mine(bias=200, token=0)` before `new` runs.
        let bias = &MineParams::schema()[0];
        let err = bias.check(&Value::Int(200)).unwrap_err();
        assert!(
            matches!(&err, ParamError::OutOfRange { param, .. } if param == "bias"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "`bias` = 200.0 is out of range; valid range is [-100, 100]"
        );
    }
}
