//! Test fixture: a library that says it was built for the next plugin ABI version. Its entry
//! aborts the process, so a host that calls it before checking the version fails loudly.

use sieve_plugin::abi::{AbiPlugin, ErrorSink, ABI_VERSION};

/// One more than the version this sieve speaks.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_plugin_abi_version() -> u32 {
    ABI_VERSION + 1
}

/// Must never be called: the host refuses the version first.
///
/// # Safety
/// Always safe to call; it aborts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sieve_plugin_entry(_err: *const ErrorSink) -> *const AbiPlugin {
    std::process::abort()
}
