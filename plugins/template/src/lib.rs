//! The smallest working sieve plugin: `mine(bias=1.0, token)` adds `bias` to the logit of
//! token `token` (when it is a candidate). It does what `logit_bias({token: bias})` does, so
//! the two can be timed side by side to measure what crossing the plugin boundary costs.
//!
//! A plugin stage is written exactly like a built-in one (compare `crates/samplers/src/top_k.rs`):
//! a parameter struct, the stage type with [`Sampler`] and [`Stage`], and one export line.
//! See `README.md` beside this crate for the walkthrough (building, installing, debugging).

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};

/// The parameters. Each field is one parameter: its name is the name used in pipelines
/// (`mine(bias=2.5, token=13)`), its `///` line the doc `sieve samplers` shows, the field
/// order the positional order (`mine(2.5, 13)`). The host validates every pipeline against
/// this schema (types, ranges, required parameters) before [`Stage::new`] runs.
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

    #[test]
    fn adds_the_bias_to_one_token() {
        let mut c = Candidates::from_logits(&[0.5, 1.0, 2.0]);
        let mut stage = Mine {
            bias: 1.5,
            token: 1,
        };
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), [(0, 0.5), (1, 2.5), (2, 2.0)]);
        // A token that is not a candidate: nothing changes.
        let mut stage = Mine {
            bias: 1.5,
            token: 7,
        };
        stage.apply(&mut c, &Context::default()).unwrap();
        assert_eq!(c.logit(1), 2.5);
    }

    #[test]
    fn token_is_required_and_bias_defaults_to_one() {
        let schema = MineParams::schema();
        assert_eq!(schema[0].name, "bias");
        assert!(schema[0].default.is_some());
        assert_eq!(schema[1].name, "token");
        assert!(schema[1].default.is_none(), "token is required");
    }
}
