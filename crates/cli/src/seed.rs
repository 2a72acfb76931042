//! The run's seed when the user gives none: [`sieve_text::sampling::random_seed`], the one
//! every front end uses (53 bits, so that it prints and parses exactly everywhere).

pub use sieve_text::sampling::random_seed;
