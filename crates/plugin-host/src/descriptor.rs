//! The stages of a loaded library: the descriptor is read and checked by
//! [`sieve_plugin::descriptor`] (the check a plugin's tests run too), its stages kept here.

use sieve_plugin::abi::AbiStage;

/// A stage of a loaded library: its descriptor, which lives as long as the process (the
/// library is never unloaded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StageRef(pub(crate) &'static AbiStage);

// SAFETY: an `AbiStage` is immutable data of a library that is never unloaded, and its
// functions may be called from any thread (the ABI contract: `create` is reentrant; a state
// is used by one thread at a time and may move between threads).
unsafe impl Send for StageRef {}
// SAFETY: as above.
unsafe impl Sync for StageRef {}
