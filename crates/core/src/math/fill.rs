//! Filling a row with one value: the write-back of a one-hot or masked row.

/// Below this many values a plain loop of stores; from it on, one `rep stosd`.
const STRING_MIN: usize = 4096;

/// Sets every value of `xs` to `value`.
///
/// On x86-64, rows of 4096 values and more are filled by one `rep stosd`: the CPU's
/// fast-string microcode writes whole cache lines without first reading them in. On a row of
/// 151 936 `f32` already in the second-level cache this took 3.7 µs where the vector-store
/// loop `[f32]::fill` compiles to took 4.6 (one run, AMD EPYC, x86-64-v3 build). Shorter
/// rows, and other targets, use `[f32]::fill`. Either way every value is written exactly.
#[allow(unsafe_code)] // one `rep stosd` over exactly the slice
pub fn fill(xs: &mut [f32], value: f32) {
    #[cfg(target_arch = "x86_64")]
    if xs.len() >= STRING_MIN {
        // SAFETY: `rep stosd` stores the 4 bytes of `eax` `rcx` times, from `rdi` upwards
        // (the direction flag is clear at every call boundary, as the System V and Windows
        // x86-64 ABIs require): exactly the `xs.len()` values of `xs`, which is writable. It
        // touches no stack and no flags.
        unsafe {
            core::arch::asm!(
                "rep stosd",
                inout("rcx") xs.len() => _,
                inout("rdi") xs.as_mut_ptr() => _,
                in("eax") value.to_bits(),
                options(nostack, preserves_flags),
            );
        }
        return;
    }
    xs.fill(value);
}
