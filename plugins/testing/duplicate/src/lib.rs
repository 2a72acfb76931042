//! Test fixture: a plugin defining a stage named `top_n_sigma`, as the real top_n_sigma
//! plugin does; loading both must fail naming both files.

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage};

/// A stage that does nothing, under a name another plugin uses.
pub struct Clash;

impl Sampler for Clash {
    fn apply(&mut self, _c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
        Ok(())
    }
}

/// No parameters.
#[derive(Params)]
pub struct NoParams {}

impl Stage for Clash {
    type Params = NoParams;
    const NAME: &'static str = "top_n_sigma";
    const DOC: &'static str = "a second top_n_sigma";
    fn new(_: NoParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Clash)
    }
}

sieve_plugin::export_plugin!(name = "duplicate", version = "0.0.0", stages = [Clash]);
