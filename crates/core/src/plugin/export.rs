//! The export macro.

/// Exports the stages of a plugin library: one line at the end of the plugin's `lib.rs`.
///
/// A complete plugin (built as a `cdylib`, it is loaded with `--plugin`):
/// ```
/// use serde::Deserialize;
/// use sieve_core::plugin::PluginStage;
/// use sieve_core::{BuildContext, Candidates, Context, Error, ParamSpec, Range, Sampler};
///
/// /// `shift(by)`: adds `by` to every logit.
/// pub struct Shift {
///     by: f32,
/// }
///
/// impl Sampler for Shift {
///     fn name(&self) -> &str {
///         "shift"
///     }
///     fn apply(&mut self, c: &mut Candidates, _cx: &Context<'_>) -> Result<(), Error> {
///         c.logits_mut().iter_mut().for_each(|l| *l += self.by);
///         Ok(())
///     }
/// }
///
/// #[derive(Deserialize)]
/// pub struct Params {
///     by: f32,
/// }
///
/// impl PluginStage for Shift {
///     type Params = Params;
///     const NAME: &'static str = "shift";
///     const DOC: &'static str = "add a constant to every logit";
///     fn params() -> Vec<ParamSpec> {
///         vec![ParamSpec::float("by", 0.0, Range::closed(-10.0, 10.0), "added")]
///     }
///     fn create(p: Params, _cx: &BuildContext<'_>) -> Result<Self, Error> {
///         Ok(Shift { by: p.by })
///     }
/// }
///
/// sieve_core::export_plugin!(name = "shift", version = "0.1.0", stages = [Shift]);
/// ```
///
/// Each type in `stages` implements [`Sampler`](crate::Sampler) and
/// [`PluginStage`](crate::plugin::PluginStage). The macro defines the two symbols of the
/// plugin ABI, `sieve_plugin_abi_version` and `sieve_plugin_entry` (see
/// [`crate::plugin`]), and the `extern "C"` functions behind every stage, each of which
/// catches panics. Use it once per library; it needs `sieve-core`'s `std` feature, and the
/// crate must be built as a `cdylib` with `panic = "unwind"` (the default).
#[macro_export]
macro_rules! export_plugin {
    (name = $name:expr, version = $version:expr, stages = [$($stage:ty),+ $(,)?] $(,)?) => {
        const _: () = {
            static SIEVE_PLUGIN_EXPORT: $crate::plugin::guest::Export =
                $crate::plugin::guest::Export::new(
                    $name,
                    $version,
                    &[$($crate::plugin::guest::stage::<$stage>()),+],
                );

            /// The plugin ABI version this library was built for.
            #[unsafe(no_mangle)]
            pub extern "C" fn sieve_plugin_abi_version() -> u32 {
                $crate::plugin::abi::ABI_VERSION
            }

            /// The plugin's descriptor, or null after a report to `err`.
            ///
            /// # Safety
            /// `err` must be null or point at a valid error sink.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn sieve_plugin_entry(
                err: *const $crate::plugin::abi::ErrorSink,
            ) -> *const $crate::plugin::abi::AbiPlugin {
                SIEVE_PLUGIN_EXPORT.entry(err)
            }
        };
    };
}
