//! The number scanner's fast path: digit runs read eight bytes at a time (SWAR: one `u64` load,
//! a digit mask, three multiplies for the value) instead of one byte per loop turn.
//!
//! It accepts only a strict subset of the JSON number grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?
//! ([eE][+-]?[0-9]+)?` with at most 19 mantissa digits and eight readable bytes after every digit
//! run, and gives up (`None`) on anything else: the byte-wise scanner then reads the token again
//! and produces exactly what it always did, including its error messages. So the fast path can
//! only ever agree with the slow one, never differ from it.

use super::{Dec, Reader};

/// Mantissa digits an exact `u64` always holds (10^19 < 2^64).
const MAX_DIGITS: usize = 19;

/// Powers of ten for merging one digit run (≤ 8 digits) into the mantissa.
const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// `'0'` in every byte.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// A number token read by the fast path.
pub(super) struct Scanned<'a> {
    pub(super) dec: Dec<'a>,
    /// Whether it has a fraction or an exponent.
    pub(super) float: bool,
    /// Index just past the token.
    pub(super) end: usize,
}

// === impl Reader ===

impl Reader<'_> {
    /// The next value as `f32` when it is a number token the fast paths read whole (a short
    /// decimal, converted without std's parser); `None`, consuming nothing, otherwise: the
    /// caller then reads it with [`Reader::number`]. Kept apart from `number` so the FP32 loop
    /// gets an `f32` in a register rather than a token struct through memory.
    #[inline]
    pub(crate) fn f32_fast(&mut self) -> Option<f32> {
        self.ws();
        let s = scan(self.buf, self.pos)?;
        let v = s.dec.f32_fast()?;
        self.pos = s.end;
        Some(v)
    }
}

/// Scans the number token at `buf[start..]`, or `None` to leave it to the byte-wise scanner.
#[inline(always)]
pub(super) fn scan(buf: &[u8], start: usize) -> Option<Scanned<'_>> {
    let mut i = start;
    // Without a branch: the sign of tensor data is as good as random.
    let negative = buf.get(i) == Some(&b'-');
    i += usize::from(negative);
    let (mut mantissa, int_digits) = digit_run(buf, i, 0)?;
    // No digits, or a leading zero ("01"): the slow path reports it.
    if int_digits == 0 || (int_digits > 1 && buf.get(i) == Some(&b'0')) {
        return None;
    }
    i += int_digits;
    let mut digits = int_digits;
    let mut exp10 = 0i64;
    let mut float = false;
    if buf.get(i) == Some(&b'.') {
        i += 1;
        let (frac, frac_digits) = digit_run(buf, i, digits)?;
        if frac_digits == 0 {
            return None;
        }
        // Both runs together fit 19 digits (checked by `digit_run`), so this cannot overflow.
        mantissa = mantissa * pow10(frac_digits)? + frac;
        digits += frac_digits;
        i += frac_digits;
        exp10 = -(frac_digits as i64);
        float = true;
    }
    if let Some(b'e' | b'E') = buf.get(i) {
        float = true;
        let (e, end) = super::exponent(buf, i + 1).ok()?;
        exp10 += e;
        i = end;
    }
    debug_assert!(digits <= MAX_DIGITS);
    Some(Scanned {
        dec: Dec {
            text: buf.get(start..i)?,
            negative,
            mantissa,
            exp10,
            exact: true,
        },
        float,
        end: i,
    })
}

/// The run of ASCII digits at `buf[i..]` as (value, length). `None` when the run would take the
/// mantissa past 19 digits (`before` are already in it) or fewer than eight bytes are left to
/// load (the end of the document: the byte-wise scanner handles it).
#[inline(always)]
fn digit_run(buf: &[u8], mut i: usize, before: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut n = 0usize;
    loop {
        let chunk: [u8; 8] = buf.get(i..i + 8)?.try_into().ok()?;
        let word = u64::from_le_bytes(chunk);
        let k = leading_digits(word);
        if before + n + k > MAX_DIGITS {
            return None;
        }
        if k > 0 {
            value = value * pow10(k)? + first_digits(word, k);
        }
        n += k;
        if k < 8 {
            return Some((value, n));
        }
        i += 8;
    }
}

#[inline]
fn pow10(k: usize) -> Option<u64> {
    POW10_U64.get(k).copied()
}

/// How many of the word's bytes, from the first (lowest), are ASCII digits: 0 to 8.
#[inline]
pub(super) fn leading_digits(word: u64) -> usize {
    // A digit byte becomes 0..=9; +0x76 keeps those below 0x80 and lifts every other byte, or it
    // already had its top bit set. A carry only spills into later bytes, so the first flagged
    // byte is always the first non-digit.
    let x = word ^ ZEROS;
    let non_digit = (x.wrapping_add(0x7676_7676_7676_7676) | x) & 0x8080_8080_8080_8080;
    (non_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `k` (0..=8) digit bytes of `word`.
#[inline]
pub(super) fn first_digits(word: u64, k: usize) -> u64 {
    // Move the k digits to the top. The zero bytes shifted in at the front read as '0' digits,
    // since `eight_digits` keeps only each byte's low nibble; k = 0 shifts everything out.
    let pad = (8 - k) as u32 * 8;
    eight_digits(word.checked_shl(pad).unwrap_or(0))
}

/// Eight ASCII digits (first byte most significant) as their value: pairs, then quads, then the
/// whole, each step one multiply that adds the scaled upper half into the lower lane.
#[inline]
fn eight_digits(word: u64) -> u64 {
    let v = (word & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(10 << 8 | 1) >> 8;
    let v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 << 16 | 1) >> 16;
    (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(10_000 << 32 | 1) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(s: &[u8]) -> u64 {
        let mut b = [b' '; 8];
        b[..s.len()].copy_from_slice(s);
        u64::from_le_bytes(b)
    }

    #[test]
    fn digit_runs_of_every_length() {
        for k in 0..=8 {
            let text = &b"12345678"[..k];
            assert_eq!(leading_digits(word(text)), k, "{k}");
            if k > 0 {
                let want: u64 = std::str::from_utf8(text).unwrap().parse().unwrap();
                assert_eq!(first_digits(word(text), k), want);
            }
        }
        assert_eq!(eight_digits(word(b"90000009")), 90_000_009);
        assert_eq!(eight_digits(word(b"00000000")), 0);
        // Bytes just outside '0'..='9' and high bytes stop a run.
        for stop in [b'/', b':', b'.', b'e', b'-', 0x80, 0xFF, 0x00] {
            let mut w = *b"123     ";
            w[3] = stop;
            assert_eq!(leading_digits(u64::from_le_bytes(w)), 3, "{stop:#x}");
        }
    }

    #[test]
    fn scans_the_same_as_the_byte_wise_scanner_or_declines() {
        let cases = [
            "-123.45601",
            "0",
            "-0.0",
            "1e5",
            "2.5E+3",
            "1.5e-07",
            "1234567890123456789",
            "12345678.12345678",
            "0.000001",
            "99999999.9",
        ];
        for token in cases {
            // Eight bytes always follow a run inside a real document (`,`, `]`, `}` ...).
            let text = format!("{token},        ");
            let s = scan(text.as_bytes(), 0).unwrap_or_else(|| panic!("{text} declined"));
            assert_eq!(s.dec.text, token.as_bytes());
            assert_eq!(s.end, token.len());
            let f: f64 = token.parse().unwrap();
            let m = s.dec.mantissa as f64 * 10f64.powi(s.dec.exp10 as i32);
            assert!((if s.dec.negative { -m } else { m } - f).abs() <= f.abs() * 1e-12);
        }
        for token in [
            "01",
            "1.",
            "-",
            ".5",
            "+1",
            "1e",
            "1e+",
            "-.5",
            "12345678901234567890",
            "1234567890.1234567890",
            "NaN",
            "-Infinity",
        ] {
            let text = format!("{token},        ");
            assert!(scan(text.as_bytes(), 0).is_none(), "{text}");
        }
        // Too close to the end of the document to load eight bytes: declined, not misread.
        assert!(scan(b"1.25", 0).is_none());
    }
}
