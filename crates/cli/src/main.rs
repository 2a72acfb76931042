//! The `sieve` binary: everything lives in the `sieve_cli` library.

fn main() -> std::process::ExitCode {
    sieve_cli::run()
}
