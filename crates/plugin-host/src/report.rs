//! The host's [`ErrorSink`]: collects what a plugin reports, and turns it into an [`Error`]
//! naming the stage and the plugin file.

use std::ffi::c_void;
use std::format;
use std::panic::{self, AssertUnwindSafe};
use std::string::String;

use sieve_core::Error;
use sieve_plugin::abi::{
    AbiStr, ErrorSink, STATUS_ABI_MISMATCH, STATUS_INVALID_ARGUMENT, STATUS_PANICKED,
    STATUS_POISONED,
};

/// What a plugin reported during one call.
#[derive(Debug, Default)]
pub(crate) struct Report {
    reported: bool,
    code: i32,
    param: String,
    message: String,
}

/// The sink's `report` function: copies the report into the [`Report`] behind `ctx`.
///
/// # Safety
/// `ctx` must be the `&mut Report` of [`Report::sink`], not otherwise in use; `param` and
/// `message` must be valid as [`AbiStr::as_bytes`] requires.
unsafe extern "C" fn collect(ctx: *mut c_void, code: i32, param: AbiStr, message: AbiStr) {
    // Nothing may unwind into the plugin: an allocation failure aborts anyway, and anything
    // else is dropped.
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's promise, as documented above.
        let (report, param, message) = unsafe {
            (
                &mut *ctx.cast::<Report>(),
                param.as_bytes(),
                message.as_bytes(),
            )
        };
        report.reported = true;
        report.code = code;
        report.param = String::from_utf8_lossy(param).into_owned();
        report.message = String::from_utf8_lossy(message).into_owned();
    }));
}

impl Report {
    /// A sink writing into `self`; `self` must stay in place and unused until the call that
    /// receives the sink returns.
    pub(crate) fn sink(&mut self) -> ErrorSink {
        ErrorSink {
            struct_size: core::mem::size_of::<ErrorSink>(),
            ctx: (self as *mut Report).cast(),
            report: collect,
        }
    }

    /// The message reported, or one saying none was.
    pub(crate) fn message(&self, status: i32) -> String {
        if self.reported {
            self.message.clone()
        } else {
            format!("failed with status {status} and no message")
        }
    }

    /// The error of a call `what` (`create`, `apply`, …) of stage `stage` from the plugin at
    /// `origin` that returned `status`.
    pub(crate) fn into_error(self, stage: &str, origin: &str, what: &str, status: i32) -> Error {
        let code = if self.reported { self.code } else { status };
        let message = self.message(status);
        let stage = stage.into();
        match code {
            STATUS_PANICKED => Error::Stage {
                stage,
                message: format!("plugin {origin} panicked in {what}: {message}"),
            },
            STATUS_INVALID_ARGUMENT if !self.param.is_empty() => Error::InvalidArgument {
                stage,
                param: self.param,
                message: format!("{message} (plugin {origin})"),
            },
            STATUS_ABI_MISMATCH => Error::Stage {
                stage,
                message: format!("plugin {origin}: ABI mismatch in {what}: {message}"),
            },
            STATUS_POISONED => Error::Stage {
                stage,
                message: format!("plugin {origin}: {message}"),
            },
            _ => Error::Stage {
                stage,
                message: format!("{message} (plugin {origin}, in {what})"),
            },
        }
    }
}
