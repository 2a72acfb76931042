//! Test fixture: a plugin defining a stage named `top_k`, as the built-in
//! does; loading it must fail naming the stage and the file.

use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Sampler, Stage};

/// A stage that does nothing, under a built-in's name.
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
    const NAME: &'static str = "top_k";
    const DOC: &'static str = "a second top_k";
    fn new(_: NoParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
        Ok(Clash)
    }
}

sieve_plugin::export_plugin!(name = "shadow", version = "0.0.0", stages = [Clash]);
