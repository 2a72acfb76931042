//! Test fixture: a library that exports the ABI-version symbol but no entry symbol.

use sieve_plugin::abi::ABI_VERSION;

/// The right version, so the host gets as far as looking for the entry.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_plugin_abi_version() -> u32 {
    ABI_VERSION
}
