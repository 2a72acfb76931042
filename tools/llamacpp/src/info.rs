//! `info`: which llama.cpp this is and what the CPU backend was built with.

use std::ffi::CStr;

use crate::args::Args;
use crate::error::Result;

/// llama.cpp's version string (`llama_version()`).
pub fn version() -> String {
    // SAFETY: llama_version returns a pointer to a static NUL-terminated string (or null).
    unsafe {
        let p = llama_cpp_sys_2::llama_version();
        if p.is_null() {
            return "unknown".into();
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// `llama_print_system_info()`: the ggml CPU features compiled in and detected.
pub fn system_info() -> String {
    // SAFETY: llama_print_system_info returns a pointer to a NUL-terminated string held in a
    // static buffer inside llama.cpp; it is copied before anything else calls into llama.cpp.
    unsafe {
        let p = llama_cpp_sys_2::llama_print_system_info();
        if p.is_null() {
            return String::new();
        }
        CStr::from_ptr(p).to_string_lossy().trim().to_string()
    }
}

/// Prints the version, the crate versions and the system info.
pub fn run(args: Args) -> Result<()> {
    args.finish()?;
    println!("llama.cpp: {}", version());
    println!("crates: llama-cpp-2 0.1.160, llama-cpp-sys-2 0.1.161");
    println!("system_info: {}", system_info());
    Ok(())
}
