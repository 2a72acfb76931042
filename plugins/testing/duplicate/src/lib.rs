//! Test fixture: a plugin defining a stage named `top_n_sigma`, as the real top_n_sigma
//! plugin does; loading both must fail naming both files.

use sieve_core::plugin::PluginStage;
use sieve_core::{BuildContext, Candidates, Context, Error, ParamSpec, Sampler};

/// A stage that does nothing, under a name another plugin uses.
pub struct Clash;

impl Sampler for Clash {
    fn name(&self) -> &str {
        "top_n_sigma"
    }
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        Ok(())
    }
}

impl PluginStage for Clash {
    type Params = ();
    const NAME: &'static str = "top_n_sigma";
    const DOC: &'static str = "a second top_n_sigma";
    fn params() -> Vec<ParamSpec> {
        Vec::new()
    }
    fn create(_: (), _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Clash)
    }
}

sieve_core::export_plugin!(name = "duplicate", version = "0.0.0", stages = [Clash]);
