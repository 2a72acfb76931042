//! Arrays handed over by address: the package's Python side (`sieve/_arrays.py`) passes the
//! data pointer and length of a C-contiguous numpy array or CPU torch tensor of the right
//! dtype, so rows are read (and, for `Batch`, written) where they are, without a copy. This is
//! the only way into the native module's array functions; they are private (`_native`), and
//! the wrappers check dtype, device, contiguity and writability before handing an address
//! over, and keep the array alive for the call.

use crate::error::Error;

/// An address and element count the Python side vouched for.
#[derive(Debug, Clone, Copy)]
pub struct Raw {
    /// The address of element 0.
    pub addr: usize,
    /// How many elements.
    pub len: usize,
}

impl Raw {
    /// Checks that the address is non-null and aligned for `T` (when there is anything to
    /// read). `what` is formatted only for the error (no allocation per call).
    ///
    /// # Errors
    /// [`Error::Input`] naming `what`.
    pub fn checked<T>(
        addr: usize,
        len: usize,
        what: std::fmt::Arguments<'_>,
    ) -> Result<Raw, Error> {
        if len > 0 && (addr == 0 || !addr.is_multiple_of(std::mem::align_of::<T>())) {
            return Err(Error::Input(format!(
                "{what}: address {addr:#x} is null or not aligned for its element type"
            )));
        }
        Ok(Raw { addr, len })
    }

    /// The elements as a slice.
    ///
    /// # Safety
    /// `addr` must point at `len` initialized, contiguous `T`s that stay alive and are not
    /// written by anyone else for `'a` (the Python wrappers keep the array referenced for the
    /// call); [`Raw::checked`] must have accepted it.
    pub unsafe fn slice<'a, T>(self) -> &'a [T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller's promise; non-null and aligned were checked.
        unsafe { std::slice::from_raw_parts(self.addr as *const T, self.len) }
    }

    /// The elements as a mutable slice.
    ///
    /// # Safety
    /// As [`Raw::slice`], and no other reference to these elements may exist for `'a` (the
    /// wrappers check the array is writable; rows given to different threads do not overlap).
    pub unsafe fn slice_mut<'a, T>(self) -> &'a mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the caller's promise; non-null and aligned were checked.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut T, self.len) }
    }
}
