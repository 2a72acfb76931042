//! The smallest working sieve plugin: `mine(bias=1.0, token=0)` adds `bias` to the logit of
//! token `token` (when it is a candidate). It does what `logit_bias({token: bias})` does, so
//! the two can be timed side by side to measure what crossing the plugin boundary costs.
//!
//! See `README.md` beside this crate for the walkthrough.

use serde::Deserialize;
use sieve_core::plugin::PluginStage;
use sieve_core::{BuildContext, Candidates, Context, Error, ParamSpec, Range, Sampler};

/// The stage: the same [`Sampler`] trait the built-in stages implement.
pub struct Mine {
    bias: f32,
    token: u32,
}

impl Sampler for Mine {
    fn name(&self) -> &str {
        "mine"
    }

    fn apply(&mut self, candidates: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        if let Some(i) = candidates.position(self.token) {
            candidates.set_logit(i, candidates.logit(i) + self.bias);
        }
        Ok(())
    }
}

/// The parameters, read from the validated arguments by serde.
#[derive(Deserialize)]
pub struct Params {
    bias: f32,
    token: u32,
}

impl PluginStage for Mine {
    type Params = Params;
    const NAME: &'static str = "mine";
    const DOC: &'static str = "add bias to the logit of one token";

    /// The schema: `sieve check` and `sieve samplers` read it, pipelines are validated
    /// against it before `create` runs.
    fn params() -> Vec<ParamSpec> {
        vec![
            ParamSpec::float(
                "bias",
                1.0,
                Range::closed(-100.0, 100.0),
                "added to the logit",
            ),
            ParamSpec::int(
                "token",
                0,
                Range::closed(0.0, u32::MAX as f64),
                "the token id",
            ),
        ]
    }

    fn create(p: Params, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Mine {
            bias: p.bias,
            token: p.token,
        })
    }
}

sieve_core::export_plugin!(
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
}
