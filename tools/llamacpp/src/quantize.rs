//! `quantize IN.gguf OUT.gguf TYPE`: llama.cpp's own `llama_model_quantize`.

use std::ffi::CString;

use crate::args::Args;
use crate::error::{Error, Result};

/// The file types this tool names, as llama.cpp's `llama_ftype` numbers (`include/llama.h`).
const FTYPES: &[(&str, u32)] = &[
    ("F32", 0),
    ("F16", 1),
    ("Q4_0", 2),
    ("Q4_1", 3),
    ("Q8_0", 7),
    ("Q5_0", 8),
    ("Q5_1", 9),
    ("Q2_K", 10),
    ("Q3_K_S", 11),
    ("Q3_K_M", 12),
    ("Q3_K", 12),
    ("Q3_K_L", 13),
    ("Q4_K_S", 14),
    ("Q4_K_M", 15),
    ("Q4_K", 15),
    ("Q5_K_S", 16),
    ("Q5_K_M", 17),
    ("Q5_K", 17),
    ("Q6_K", 18),
    ("BF16", 32),
];

/// Quantizes IN into OUT; `--pure` puts every matrix (embeddings and output included) in TYPE
/// instead of llama.cpp's per-tensor recipe.
pub fn run(mut args: Args) -> Result<()> {
    let pure = args.flag("--pure");
    let threads: i32 = args.number("--threads", 0)?;
    let input = args.positional("IN.gguf")?;
    let output = args.positional("OUT.gguf")?;
    let type_name = args.positional("TYPE")?;
    args.finish()?;

    let upper = type_name.to_ascii_uppercase();
    let Some(&(_, ftype)) = FTYPES.iter().find(|(n, _)| *n == upper) else {
        let names: Vec<&str> = FTYPES.iter().map(|(n, _)| *n).collect();
        return Err(Error::Usage(format!(
            "TYPE `{type_name}` is not one of {}",
            names.join(" ")
        )));
    };
    if !std::path::Path::new(&input).is_file() {
        return Err(Error::Usage(format!("{input}: no such file")));
    }
    let c_in = CString::new(input.clone()).map_err(|_| Error::Usage("IN has a NUL byte".into()))?;
    let c_out =
        CString::new(output.clone()).map_err(|_| Error::Usage("OUT has a NUL byte".into()))?;

    // SAFETY: llama_model_quantize_default_params takes nothing and returns a plain struct.
    let mut params = unsafe { llama_cpp_sys_2::llama_model_quantize_default_params() };
    params.nthread = threads;
    params.ftype = ftype as _;
    params.pure_ = pure;
    // SAFETY: both paths are NUL-terminated strings that outlive the call, and `params` is a
    // fully initialised struct from llama.cpp's own defaults.
    let rc =
        unsafe { llama_cpp_sys_2::llama_model_quantize(c_in.as_ptr(), c_out.as_ptr(), &params) };
    if rc != 0 {
        return Err(Error::Llama(format!(
            "quantizing {input} to {upper} failed (code {rc})"
        )));
    }
    eprintln!("{output}: {upper}{}", if pure { " (pure)" } else { "" });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_map_to_llama_ftype_numbers() {
        let find = |n: &str| FTYPES.iter().find(|(name, _)| *name == n).map(|(_, v)| *v);
        assert_eq!(find("Q4_0"), Some(2));
        assert_eq!(find("Q4_K"), find("Q4_K_M"));
        assert_eq!(find("BF16"), Some(32));
        assert_eq!(find("Q4_2"), None);
        let mut names: Vec<&str> = FTYPES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FTYPES.len(), "duplicate type name");
    }

    #[test]
    fn an_unknown_type_is_a_usage_error_naming_it() {
        let a = Args::new(["in.gguf", "out.gguf", "Q9_9"].map(String::from).to_vec());
        assert!(matches!(run(a), Err(Error::Usage(m)) if m.contains("Q9_9")));
    }
}
