//! Test fixture: a plugin defining a stage named `top_k`, as the built-in
//! does; loading it must fail naming the stage and the file.

use sieve_core::plugin::PluginStage;
use sieve_core::{BuildContext, Candidates, Context, Error, ParamSpec, Sampler};

/// A stage that does nothing, under a built-in's name.
pub struct Clash;

impl Sampler for Clash {
    fn name(&self) -> &str {
        "top_k"
    }
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        Ok(())
    }
}

impl PluginStage for Clash {
    type Params = ();
    const NAME: &'static str = "top_k";
    const DOC: &'static str = "a second top_k";
    fn params() -> Vec<ParamSpec> {
        Vec::new()
    }
    fn create(_: (), _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Clash)
    }
}

sieve_core::export_plugin!(name = "shadow", version = "0.0.0", stages = [Clash]);
