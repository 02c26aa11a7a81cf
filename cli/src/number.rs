//! Numbers on the command line, read one way everywhere a number is taken (`--mem-len`,
//! `--grid`, `--block`, `--n`, `encode`'s integers and a pointer's offset and length): decimal
//! digits, or `0x` and hex digits; an integer of a signed type may start with `-`. No `+`, no
//! separators, no other base.

/// A non-negative integer: decimal, or `0x` (or `0X`) and hex digits. `None` for anything else
/// or past `u64::MAX`.
pub(crate) fn unsigned(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(digits) if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit()) => {
            u64::from_str_radix(digits, 16).ok()
        }
        Some(_) => None,
        None if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

/// An integer that may be negative: an optional `-`, then what [`unsigned`] reads. `None` for
/// anything else or outside `i64`.
pub(crate) fn signed(text: &str) -> Option<i64> {
    match text.strip_prefix('-') {
        Some(magnitude) => {
            let magnitude = unsigned(magnitude)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        None => i64::try_from(unsigned(text)?).ok(),
    }
}

/// A clap value parser for an unsigned number in `0..=max`, decimal or `0x` hex.
pub(crate) fn unsigned_up_to(max: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |text: &str| match unsigned(text) {
        Some(value) if value <= max => Ok(value),
        Some(value) => Err(format!("{value} is not in 0..={max}")),
        None => Err(format!("`{text}` is not a number (decimal, or 0x and hex digits)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_hex() {
        assert_eq!(unsigned("4096"), Some(4096));
        assert_eq!(unsigned("0x1000"), Some(4096));
        assert_eq!(unsigned("0X1000"), Some(4096));
        assert_eq!(unsigned("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(unsigned("18446744073709551615"), Some(u64::MAX));
        for bad in
            ["", "0x", "+1", "-1", "1_000", "0x1g", "18446744073709551616", "0x1ffffffffffffffff", " 1"]
        {
            assert_eq!(unsigned(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn signed_takes_a_minus() {
        assert_eq!(signed("-7"), Some(-7));
        assert_eq!(signed("-0x10"), Some(-16));
        assert_eq!(signed("0x7fffffffffffffff"), Some(i64::MAX));
        assert_eq!(signed("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(signed("-0x8000000000000000"), Some(i64::MIN));
        for bad in ["9223372036854775808", "-9223372036854775809", "--1", "-", "+7"] {
            assert_eq!(signed(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bounded_values_for_clap() {
        let parse = unsigned_up_to(4096);
        assert_eq!(parse("0x1000"), Ok(4096));
        assert_eq!(parse("4097"), Err("4097 is not in 0..=4096".to_owned()));
        assert!(parse("1k").unwrap_err().contains("not a number"));
    }
}
