//! Warns when an x86-64 build of the plugin has no AVX2: the `sieve_plugin::math` kernels
//! (softmax, max, exp) pick their code when they are compiled, and without
//! `-C target-cpu=x86-64-v3` they do not vectorize 8 lanes wide (the plugin ran 1.8× slower).
//! Cargo reads `.cargo/config.toml` from the directory it is run in, and `RUSTFLAGS` replaces
//! it, so a build from elsewhere (`--manifest-path`) silently loses the flags; this says so.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if arch == "x86_64" && !features.split(',').any(|f| f == "avx2") {
        println!(
            "cargo:warning=built without AVX2: the logit kernels will not vectorize 8 lanes \
             wide (about 1.8x slower). Build from this crate's directory so cargo reads its \
             .cargo/config.toml, or set RUSTFLAGS=\"-C target-cpu=x86-64-v3\"."
        );
    }
}
