//! Hex text to bytes and back, as `decode` reads it and `encode` prints it.
//!
//! Input: pairs of hex digits (either case); all whitespace, anywhere, is ignored, so records
//! may be spaced or split across lines. Output: lowercase, no separators.

use std::fmt;

/// Why a hex text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HexError {
    /// A character that is neither a hex digit nor whitespace.
    InvalidDigit {
        /// The character.
        found: char,
        /// Its 0-based position among the input's characters.
        position: usize,
    },
    /// An odd number of hex digits: the last byte is missing a digit.
    OddDigitCount {
        /// The number of hex digits read.
        digits: usize,
    },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::InvalidDigit { found, position } => {
                write!(f, "invalid hex: {found:?} at character {position} is not a hex digit")
            }
            HexError::OddDigitCount { digits } => {
                write!(f, "invalid hex: {digits} hex digits is an odd count; every byte takes two")
            }
        }
    }
}

/// The bytes spelled by `text`, ignoring whitespace.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, HexError> {
    let mut bytes = Vec::with_capacity(text.len() / 2);
    let mut high: Option<u8> = None;
    let mut digits = 0usize;
    for (position, found) in text.chars().enumerate() {
        if found.is_whitespace() {
            continue;
        }
        let nibble = found
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
            .ok_or(HexError::InvalidDigit { found, position })?;
        digits += 1;
        match high.take() {
            None => high = Some(nibble),
            Some(h) => bytes.push((h << 4) | nibble),
        }
    }
    if high.is_some() {
        return Err(HexError::OddDigitCount { digits });
    }
    Ok(bytes)
}

/// `bytes` as lowercase hex without separators.
pub(crate) fn encode(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_anywhere_is_ignored() {
        assert_eq!(decode(" 0 1\tF9\nff ff\r\n ff "), Ok(vec![0x01, 0xf9, 0xff, 0xff, 0xff]));
        assert_eq!(decode(""), Ok(vec![]));
        assert_eq!(decode(" \n"), Ok(vec![]));
    }

    #[test]
    fn bad_digits_and_odd_counts_are_named() {
        assert_eq!(decode("01 0g"), Err(HexError::InvalidDigit { found: 'g', position: 4 }));
        assert_eq!(decode("0x01"), Err(HexError::InvalidDigit { found: 'x', position: 1 }));
        assert_eq!(decode("01 2"), Err(HexError::OddDigitCount { digits: 3 }));
        assert_eq!(decode("é"), Err(HexError::InvalidDigit { found: 'é', position: 0 }));
    }

    #[test]
    fn encode_is_lowercase_and_inverts_decode() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = encode(&bytes);
        assert_eq!(&text[..8], "00010203");
        assert_eq!(&text[text.len() - 4..], "feff");
        assert_eq!(decode(&text), Ok(bytes));
    }
}
