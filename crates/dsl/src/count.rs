//! With the `count-parses` feature, a per-thread count of the texts parsed: a front end's
//! test runs a command and checks that it parsed its pipeline once. Without the feature,
//! counting is nothing.

#[cfg(feature = "count-parses")]
std::thread_local! {
    static PARSES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Counts one parse of pipeline text (stage lists are not counted: they are not text).
#[inline]
pub(crate) fn parsed() {
    #[cfg(feature = "count-parses")]
    PARSES.with(|n| n.set(n.get() + 1));
}

/// How many times this thread has parsed pipeline text ([`crate::PipelineSpec::parse`],
/// [`crate::Parsed::parse`], [`crate::compile`], [`crate::PipelineSource::resolve`] of text)
/// since it started. Only with the `count-parses` feature.
#[cfg(feature = "count-parses")]
pub fn parses() -> usize {
    PARSES.with(core::cell::Cell::get)
}
