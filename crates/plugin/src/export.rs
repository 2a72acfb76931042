//! The export macro.

/// Exports the stages of a plugin library: one line at the end of the plugin's `lib.rs`.
///
/// A complete plugin (built as a `cdylib`, it is loaded with `--plugin`):
/// ```
/// use sieve_plugin::{BuildContext, Candidates, Context, Error, Params, Range, Sampler, Stage};
///
/// /// The parameters of `shift`.
/// #[derive(Params)]
/// pub struct ShiftParams {
///     /// added to every logit
///     #[param(default = 0.0, range = Range::closed(-10.0, 10.0))]
///     pub by: f32,
/// }
///
/// /// `shift(by)`: adds `by` to every logit.
/// pub struct Shift {
///     by: f32,
/// }
///
/// impl Sampler for Shift {
///     fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
///         c.logits_mut().iter_mut().for_each(|l| *l += self.by);
///         Ok(())
///     }
/// }
///
/// impl Stage for Shift {
///     const NAME: &'static str = "shift";
///     const DOC: &'static str = "add a constant to every logit";
///     type Params = ShiftParams;
///     fn new(p: ShiftParams, _cx: &BuildContext<'_>) -> Result<Self, Error> {
///         Ok(Shift { by: p.by })
///     }
/// }
///
/// sieve_plugin::export_plugin!(name = "shift", version = "0.1.0", stages = [Shift]);
/// ```
///
/// Each type in `stages` implements [`Stage`](crate::Stage) — exactly what a built-in stage
/// implements. `name` and `version` describe the library; `sieve samplers` shows them beside
/// each stage (a stage's own name is its [`Stage::NAME`](crate::Stage::NAME), the only name it
/// has in pipelines). The macro defines the two symbols of the plugin ABI,
/// `sieve_plugin_abi_version` and `sieve_plugin_entry` (see the [crate docs](crate)), and
/// the `extern "C"` functions behind every stage, each of which catches panics. Use it once
/// per library; it needs this crate's `std` feature (on by default).
///
/// # Compile errors
/// Building with `panic = "abort"` is refused: a panic could then not be caught at the
/// boundary, and would end the `sieve` process (exit 134, no message) instead of becoming an
/// error naming the stage. Remove `panic = "abort"` from the profile that builds the plugin.
#[macro_export]
macro_rules! export_plugin {
    (name = $name:expr, version = $version:expr, stages = [$($stage:ty),+ $(,)?] $(,)?) => {
        #[cfg(panic = "abort")]
        ::core::compile_error!(
            "sieve plugins must be built with `panic = \"unwind\"` (Rust's default): under \
             `panic = \"abort\"` a panic in the plugin cannot be caught at the plugin boundary and \
             kills the sieve process without a message. Remove `panic = \"abort\"` from the \
             [profile] that builds this plugin."
        );

        const _: () = {
            static SIEVE_PLUGIN_EXPORT: $crate::guest::Export = $crate::guest::Export::new(
                $name,
                $version,
                &[$($crate::guest::stage::<$stage>()),+],
            );

            /// The plugin ABI version this library was built for.
            #[unsafe(no_mangle)]
            pub extern "C" fn sieve_plugin_abi_version() -> u32 {
                $crate::abi::ABI_VERSION
            }

            /// The plugin's descriptor, or null after a report to `err`.
            ///
            /// # Safety
            /// `err` must be null or point at a valid error sink.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn sieve_plugin_entry(
                err: *const $crate::abi::ErrorSink,
            ) -> *const $crate::abi::AbiPlugin {
                SIEVE_PLUGIN_EXPORT.entry(err)
            }
        };
    };
}
