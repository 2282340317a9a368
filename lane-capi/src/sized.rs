//! Size-prefixed structs (ABI 13): every struct the caller passes in or gets filled starts
//! with `size: u32`, `sizeof` the struct as the caller's header declares it. The library reads
//! and writes only that many bytes, so a struct grows at its end without a new ABI major.
//!
//! The rule, for a struct whose ABI 13 size is `v13` and whose size in this library is `ours`:
//!
//! - `size < v13`: refused (`ABI_MISMATCH`), naming the struct and both sizes; nothing is read
//!   or written (a poll takes no outcome).
//! - `v13 <= size <= ours` (a client older than the library): the first `size` bytes are read
//!   and the fields past them are zero, each field's documented default; an output gets its
//!   first `size` bytes. Only a size some release declared is accepted (`v13`, `ours`, or one
//!   of [`Sized13::RELEASED`]): any other ends inside a field (half a function pointer read as
//!   a non-NULL garbage pointer), so it is refused.
//! - `ours < size <= RUN_LANE_MAX_STRUCT_SIZE` (a client newer than the library): a size that
//!   is not a multiple of the struct's alignment is not a `sizeof`, refused; otherwise an input is
//!   accepted when every byte past `ours` is zero (the client left the fields this library does
//!   not know at their defaults) and refused otherwise, naming the first non-zero byte; an
//!   output gets `ours` bytes and the rest of its `size` zeroed (unset).
//! - `size > RUN_LANE_MAX_STRUCT_SIZE`: not a size (an unset field): refused.
//!
//! A field added later must start at or past the ABI 13 `sizeof` (never in the tail padding an
//! old client passes as part of its size), and its zero must be its default.

use core::mem::{MaybeUninit, align_of, size_of};

use crate::error::Error;
use crate::types::{
    RUN_LANE_MAX_STRUCT_SIZE, RunLaneCloseReport, RunLaneConfig, RunLaneDeviceOps,
    RunLaneNoticeMonitorReport, RunLaneOutcome, RunLaneRunStatus, RunLaneStatus, RunLaneSubmit,
};

/// A size-prefixed struct of the ABI: its name, its ABI 13 size, and a `size` field first.
///
/// # Safety
///
/// The implementing type is `#[repr(C)]` with `size: u32` as its first field, and every bit
/// pattern of zero bytes is a valid value of it (integers, bools, pointers, `Option<fn>`, enums
/// with a zero variant).
pub unsafe trait Sized13: Copy {
    /// The struct's C name.
    const NAME: &'static str;
    /// `sizeof` the struct in ABI 13, the first release with size prefixes: the smallest
    /// size accepted. Frozen: once a field is added, this stays the ABI 13 number.
    const V13: usize;
    /// The sizes released between ABI 13's and this library's (exclusive), ascending: a struct
    /// that grew twice lists the size it had in between, so a client of that release is still
    /// accepted. Any other size between [`Sized13::V13`] and `size_of::<Self>()` ends inside a
    /// field and is refused.
    const RELEASED: &'static [usize] = &[];
    /// Sets the `size` field.
    fn set_size(&mut self, size: u32);
}

macro_rules! sized13 {
    ($($ty:ident = $v13:expr),* $(,)?) => {$(
        // SAFETY: `#[repr(C)]`, `size: u32` first, and every field is an integer, a bool, a
        // pointer, an `Option` of a function pointer, a fixed array of those, or an enum with
        // a variant 0 (see types.rs).
        unsafe impl Sized13 for $ty {
            const NAME: &'static str = stringify!($ty);
            const V13: usize = $v13;
            fn set_size(&mut self, size: u32) {
                self.size = size;
            }
        }
        const _: () = assert!(size_of::<$ty>() >= $v13 && $v13 <= RUN_LANE_MAX_STRUCT_SIZE as usize);
    )*};
}

// The ABI 13 sizes on the 64-bit targets the lane runs on (LP64). Frozen: a later field grows
// `size_of` and leaves these as they are; tests/compat checks them against the ABI 13 header.
#[cfg(target_pointer_width = "64")]
sized13! {
    RunLaneConfig = 256,
    RunLaneSubmit = 56,
    RunLaneDeviceOps = 208,
    RunLaneOutcome = 1744,
    RunLaneCloseReport = 2176,
    RunLaneRunStatus = 32,
    RunLaneNoticeMonitorReport = 1036,
}

/// The size the caller wrote in the struct at `ptr`, checked against `T`'s ABI 13 size and the
/// largest size accepted.
///
/// # Safety
///
/// `ptr` is non-NULL and readable for 4 bytes.
unsafe fn caller_size<T: Sized13>(ptr: *const T) -> Result<usize, Error> {
    // SAFETY: `size: u32` is the first field, readable (this function's contract); read
    // unaligned so a misaligned caller's pointer is no undefined behaviour here.
    let size = unsafe { ptr.cast::<u32>().read_unaligned() };
    if (size as usize) < T::V13 {
        return mismatch(format!(
            "{name}.size is {size}, below {v13}, sizeof({name}) in ABI 13 (the first with size \
             prefixes; this library's is {ours}): set size = sizeof({name}) from run_lane.h \
             of ABI 13 or later (RUN_LANE_INIT), and rebuild a client written for an older ABI",
            name = T::NAME,
            v13 = T::V13,
            ours = size_of::<T>(),
        ));
    }
    if size > RUN_LANE_MAX_STRUCT_SIZE {
        return mismatch(format!(
            "{name}.size is {size}, above RUN_LANE_MAX_STRUCT_SIZE ({RUN_LANE_MAX_STRUCT_SIZE}): \
             not a size (this library's sizeof({name}) is {ours}); set size = sizeof({name}) \
             (RUN_LANE_INIT)",
            name = T::NAME,
            ours = size_of::<T>(),
        ));
    }
    let (size, ours, align) = (size as usize, size_of::<T>(), align_of::<T>());
    if size > T::V13 && size < ours && !T::RELEASED.contains(&size) {
        return mismatch(format!(
            "{name}.size is {size}, between sizeof({name}) in ABI 13 ({v13}) and this \
             library's ({ours}) but the size of no release ({released:?}): it ends inside a \
             field, which would be read half; set size = sizeof({name}) (RUN_LANE_INIT)",
            name = T::NAME,
            v13 = T::V13,
            released = [T::V13].iter().chain(T::RELEASED).chain([ours].iter()).collect::<Vec<_>>(),
        ));
    }
    if size > ours && size % align != 0 {
        return mismatch(format!(
            "{name}.size is {size}, not a multiple of alignof({name}) ({align}): not the \
             sizeof of any {name} (this library's is {ours}); set size = sizeof({name}) \
             (RUN_LANE_INIT)",
            name = T::NAME,
        ));
    }
    Ok(size)
}

/// An `ABI_MISMATCH` refusal.
fn mismatch<T>(message: String) -> Result<T, Error> {
    Err(Error::new(RunLaneStatus::AbiMismatch, message))
}

/// Reads the caller's struct at `ptr` by its `size`: the first `min(size, sizeof T)` bytes,
/// the fields past them zero (their defaults); a larger struct is accepted only when every
/// byte past this library's `sizeof T` is zero. The value's `size` is this library's.
///
/// # Safety
///
/// `ptr` is non-NULL, aligned for `T`, and readable for the `size` bytes its first field
/// states (the caller's contract: `size` is `sizeof` the struct it passed).
pub unsafe fn read_in<T: Sized13>(ptr: *const T) -> Result<T, Error> {
    // SAFETY: forwarded (this function's contract).
    let size = unsafe { caller_size(ptr) }?;
    let ours = size_of::<T>();
    if size > ours {
        // SAFETY: the caller's struct is `size` bytes (this function's contract).
        let tail = unsafe { core::slice::from_raw_parts(ptr.cast::<u8>().add(ours), size - ours) };
        if let Some(at) = tail.iter().position(|&b| b != 0) {
            return mismatch(format!(
                "{name}.size is {size}, this library's sizeof({name}) is {ours} (ABI \
                 {abi}), and byte {byte} past it is not zero: the client sets a field this \
                 library does not know; link the library its run_lane.h came with (or a \
                 newer one), or leave that field zero",
                name = T::NAME,
                abi = crate::types::RUN_LANE_ABI_VERSION,
                byte = ours + at,
            ));
        }
    }
    let mut value = MaybeUninit::<T>::zeroed();
    // SAFETY: `min(size, ours)` bytes are readable at `ptr` (this function's contract) and
    // writable in `value`; the two do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            ptr.cast::<u8>(),
            value.as_mut_ptr().cast::<u8>(),
            size.min(ours),
        );
    }
    // SAFETY: zero bytes are a valid `T` (`Sized13`'s contract), and so are the caller's
    // bytes, a `T` as its header declares it (the caller's contract).
    let mut value = unsafe { value.assume_init() };
    value.set_size(ours as u32);
    Ok(value)
}

/// Checks the caller's struct at `out` can take an output (its `size` is accepted), without
/// writing: so a poll refuses before it takes an outcome.
///
/// # Safety
///
/// `out` is non-NULL, aligned for `T` and readable for 4 bytes.
pub unsafe fn check_out<T: Sized13>(out: *const T) -> Result<(), Error> {
    // SAFETY: forwarded (this function's contract).
    unsafe { caller_size(out) }.map(|_| ())
}

/// Writes `value` to the caller's struct at `out` by its `size`: the first `min(size, sizeof
/// T)` bytes of `value`, then zero up to `size` (fields this library does not know are
/// unset); `size` stays the caller's.
///
/// # Safety
///
/// `out` is non-NULL, aligned for `T`, and writable for the `size` bytes its first field
/// states (the caller's contract).
pub unsafe fn write_out<T: Sized13>(out: *mut T, mut value: T) -> Result<(), Error> {
    // SAFETY: forwarded (this function's contract).
    let size = unsafe { caller_size(out) }?;
    let ours = size_of::<T>();
    value.set_size(size as u32);
    // SAFETY: `out` is writable for `size` bytes (this function's contract); `value` is a
    // local, readable for `ours`; they do not overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&raw const value).cast::<u8>(),
            out.cast::<u8>(),
            size.min(ours),
        );
        if size > ours {
            core::ptr::write_bytes(out.cast::<u8>().add(ours), 0, size - ours);
        }
    }
    Ok(())
}

/// A zeroed `T` with `size` set to this library's `sizeof T`: Rust's `RUN_LANE_INIT`, for an
/// output the library fills or an input to fill field by field.
pub fn init<T: Sized13>() -> MaybeUninit<T> {
    let mut value = MaybeUninit::<T>::zeroed();
    // SAFETY: zero bytes are a valid `T` (`Sized13`'s contract).
    unsafe { value.assume_init_mut() }.set_size(size_of::<T>() as u32);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A struct as a later library has it: ABI 13's fields (`size`, `a`) and one added after,
    /// `grown`, whose zero is its default.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Grown {
        size: u32,
        a: u32,
        grown: u64,
    }

    // SAFETY: `#[repr(C)]`, `size: u32` first, integers only.
    unsafe impl Sized13 for Grown {
        const NAME: &'static str = "Grown";
        const V13: usize = 8;
        fn set_size(&mut self, size: u32) {
            self.size = size;
        }
    }

    /// The caller's bytes: a struct of `size` bytes, every byte `fill`, then `size` and `a`.
    fn caller(size: u32, a: u32, fill: u8) -> Vec<u64> {
        let mut words = vec![u64::from_ne_bytes([fill; 8]); 8];
        let bytes = words.as_mut_ptr().cast::<u8>();
        // SAFETY: 64 bytes, written within.
        unsafe {
            bytes.cast::<u32>().write(size);
            bytes.add(4).cast::<u32>().write(a);
        }
        words
    }

    /// `read_in` of the caller's bytes `words` as a `Grown`, refused with `ABI_MISMATCH`.
    fn refused(words: &[u64]) -> Error {
        // SAFETY: the buffer holds 64 readable bytes, aligned for `Grown`; a refusal reads
        // nothing past `size`.
        let error = unsafe { read_in(words.as_ptr().cast::<Grown>()) }.unwrap_err();
        assert_eq!(error.status, RunLaneStatus::AbiMismatch);
        error
    }

    #[test]
    fn a_short_struct_gets_defaults_for_its_missing_tail() {
        // An ABI 13 client: 8 bytes; what lies past them (0xAB) is not its struct.
        let words = caller(8, 7, 0xAB);
        // SAFETY: the buffer holds 64 readable bytes, aligned for `Grown`.
        let read = unsafe { read_in(words.as_ptr().cast::<Grown>()) }.unwrap();
        assert_eq!(read, Grown { size: 16, a: 7, grown: 0 });
    }

    #[test]
    fn a_size_below_the_abi_13_size_is_refused_naming_the_struct_and_both_sizes() {
        let error = refused(&caller(4, 7, 0));
        assert!(
            error.message.contains("Grown.size is 4") && error.message.contains("below 8"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_longer_struct_is_read_when_its_unknown_tail_is_zero_and_refused_otherwise() {
        let zero_tail = caller(24, 7, 0);
        // SAFETY: as above.
        let read = unsafe { read_in(zero_tail.as_ptr().cast::<Grown>()) }.unwrap();
        assert_eq!(read.a, 7);
        let mut set_tail = caller(24, 7, 0);
        set_tail[2] = 1 << 8;
        let error = refused(&set_tail);
        assert!(error.message.contains("byte 17"), "{}", error.message);
        let error = refused(&caller(RUN_LANE_MAX_STRUCT_SIZE + 1, 7, 0));
        assert!(error.message.contains("not a size"), "{}", error.message);
    }

    #[test]
    fn an_output_writes_only_the_callers_size_and_zeroes_a_longer_callers_tail() {
        let value = Grown { size: 16, a: 9, grown: u64::MAX };
        // An ABI 13 client's 8 bytes: the canary past them stays.
        let mut short = caller(8, 0, 0xCD);
        // SAFETY: 64 writable bytes, aligned.
        unsafe { write_out(short.as_mut_ptr().cast::<Grown>(), value) }.unwrap();
        let bytes = short.as_ptr().cast::<u8>();
        // SAFETY: reads within the 64 bytes.
        unsafe {
            assert_eq!(bytes.cast::<u32>().read(), 8, "the size stays the caller's");
            assert_eq!(bytes.add(4).cast::<u32>().read(), 9);
            assert_eq!(short[1], u64::from_ne_bytes([0xCD; 8]));
        }
        // A newer client's 24 bytes: ours written, the 8 past them zeroed, nothing further.
        let mut long = caller(24, 0, 0xCD);
        // SAFETY: as above.
        unsafe { write_out(long.as_mut_ptr().cast::<Grown>(), value) }.unwrap();
        assert_eq!(long[1], u64::MAX);
        assert_eq!(long[2], 0);
        assert_eq!(long[3], u64::from_ne_bytes([0xCD; 8]));
    }

    #[test]
    fn a_size_between_released_sizes_is_refused_for_inputs_and_outputs() {
        // 12 bytes: `grown` would be read half the caller's and half zero.
        let words = caller(12, 7, 0xAB);
        let error = refused(&words);
        assert!(
            error.message.contains("Grown.size is 12") && error.message.contains("inside a field"),
            "{}",
            error.message
        );
        // SAFETY: as above.
        assert!(unsafe { check_out(words.as_ptr().cast::<Grown>()) }.is_err());
    }
}
