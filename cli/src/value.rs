//! How an argument's value is spelled: one spelling per value, for `kargs decode`'s table,
//! `kargs-demo`'s argv table (demo/ compiles this file too) and, for floats, the `value` and `bits` of `kargs decode --json`.
//!
//! ```text
//! -7                            i32, i64, u32, u64: decimal
//! 1.5 (bits 0x3fc00000)         f32, f64: the shortest decimal that reads back, and the raw bits
//! -NaN quiet (bits 0xffc00001)  a NaN: its sign and class (quiet or signalling), and the bits
//! [64, +128)                    ptr: the window, guest offset and byte length
//! ```
//!
//! The bits are the exact value; the decimal is for people (`"NaN"` for every NaN).

use kernel_args_core::{Arg, F32Bits, F64Bits, LoweredArgSnapshot};

/// An argument's value for people, as the tables show it.
pub(crate) fn human(arg: &LoweredArgSnapshot) -> String {
    match *arg {
        Arg::I32(v) => v.to_string(),
        Arg::I64(v) => v.to_string(),
        Arg::U32(v) => v.to_string(),
        Arg::U64(v) => v.to_string(),
        Arg::F32(bits) => {
            let v = bits.to_f32();
            float(f32_value(bits), f32_bits(bits), v.is_nan(), v.is_sign_negative(), bits.0 & (1 << 22) != 0)
        }
        Arg::F64(bits) => {
            let v = bits.to_f64();
            float(f64_value(bits), f64_bits(bits), v.is_nan(), v.is_sign_negative(), bits.0 & (1 << 51) != 0)
        }
        Arg::Ptr(range) => format!("[{}, +{})", range.guest_offset, range.len),
    }
}

/// `1.5 (bits 0x3fc00000)`, or for a NaN its sign and class: `-NaN quiet (bits 0xffc00001)`.
fn float(decimal: String, bits: String, is_nan: bool, negative: bool, quiet_bit: bool) -> String {
    if is_nan {
        let sign = if negative { "-" } else { "" };
        let class = if quiet_bit { "quiet" } else { "signalling" };
        format!("{sign}NaN {class} (bits {bits})")
    } else {
        format!("{decimal} (bits {bits})")
    }
}

/// `0x` and the 8 hex digits of an `f32`'s bits.
pub(crate) fn f32_bits(bits: F32Bits) -> String {
    format!("{:#010x}", bits.0)
}

/// `0x` and the 16 hex digits of an `f64`'s bits.
pub(crate) fn f64_bits(bits: F64Bits) -> String {
    format!("{:#018x}", bits.0)
}

/// The shortest decimal that reads back as the same `f32` (`"NaN"` for every NaN).
pub(crate) fn f32_value(bits: F32Bits) -> String {
    format!("{:?}", bits.to_f32())
}

/// The shortest decimal that reads back as the same `f64` (`"NaN"` for every NaN).
pub(crate) fn f64_value(bits: F64Bits) -> String {
    format!("{:?}", bits.to_f64())
}

#[cfg(test)]
mod tests {
    use kernel_args_core::GuestRange;

    use super::*;

    #[test]
    fn float_spellings() {
        assert_eq!(f32_bits(F32Bits::from_f32(1.5)), "0x3fc00000");
        assert_eq!(f32_bits(F32Bits(1)), "0x00000001");
        assert_eq!(f64_bits(F64Bits::from_f64(1.5)), "0x3ff8000000000000");
        assert_eq!(f64_bits(F64Bits(0)), "0x0000000000000000");
        assert_eq!(f32_value(F32Bits::from_f32(1.5)), "1.5");
        assert_eq!(f32_value(F32Bits(0x8000_0000)), "-0.0");
        assert_eq!(f32_value(F32Bits(0xff80_0000)), "-inf");
        assert_eq!(f32_value(F32Bits(0x7fa0_0001)), "NaN");
        assert_eq!(f32_value(F32Bits(1)), "1e-45");
        assert_eq!(f64_value(F64Bits::from_f64(f64::MAX)), "1.7976931348623157e308");
        assert_eq!(f64_value(F64Bits(0x7ff0_0000_0000_0000)), "inf");
    }

    #[test]
    fn human_spellings() {
        assert_eq!(human(&Arg::I64(i64::MIN)), "-9223372036854775808");
        assert_eq!(human(&Arg::U32(u32::MAX)), "4294967295");
        assert_eq!(human(&Arg::F32(F32Bits::from_f32(1.5))), "1.5 (bits 0x3fc00000)");
        assert_eq!(human(&Arg::F64(F64Bits(0x8000_0000_0000_0000))), "-0.0 (bits 0x8000000000000000)");
        assert_eq!(human(&Arg::F32(F32Bits(0x7fa0_0001))), "NaN signalling (bits 0x7fa00001)");
        assert_eq!(human(&Arg::F32(F32Bits(0xffc0_0001))), "-NaN quiet (bits 0xffc00001)");
        assert_eq!(human(&Arg::F64(F64Bits(0x7ff8_0000_0000_0000))), "NaN quiet (bits 0x7ff8000000000000)");
        assert_eq!(human(&Arg::Ptr(GuestRange { guest_offset: 64, len: 128 })), "[64, +128)");
    }
}
