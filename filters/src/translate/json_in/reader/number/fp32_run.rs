//! The FP32 tensor fast path: a flat run of JSON numbers decoded straight into little-endian
//! `f32` bytes, which are at once the payload of the packed `fp32_contents` field and the raw
//! tensor form, so nothing is converted or copied again on the way out.
//!
//! Per element: the sign without a branch; the integer digits, then up to 16 fraction digits
//! read as two SWAR words whatever their split (the number of digits is as random as the
//! values, so a branch on it mispredicts); one `f64` multiply by the nearest `f64` of 10^q;
//! one rounding to `f32`. Profiling the previous loop (Clinger's fast path) put ~18 % of its
//! samples on the `divss`/`divsd` and most of the rest behind data-dependent branches.
//!
//! Why the multiply is exact enough: the mantissa (< 2^63, so one rounding at most), 10^q and
//! the product each round once by at most 2^-53 relative, so the product is within 3.0000002
//! `f64` ulps of the decimal's true value. `f32` keeps the top 24 of `f64`'s 53 significand bits;
//! the 29 it drops read exactly `0x1000_0000` at an `f32` rounding midpoint. When the product is
//! more than 4 ulps from every midpoint, the true value lies on the same side of all of them and
//! rounds to the same `f32`; otherwise (about one value in 50 million), and for anything the
//! loop does not read whole (long mantissas, exponents outside -30..=20 net, NaN, the end of
//! the document, bad grammar), it stops
//! before the element and the generic reader, which is exact and reports errors, takes over.
//! So the fast path gives what `str::parse::<f32>` gives, or nothing.

use super::Reader;
use super::fast_number::{first_digits, leading_digits};

/// The smallest power of ten in [`POW10_F64`].
const MIN_Q: i64 = -30;

/// 10^q as the nearest `f64` (the compiler rounds each literal correctly), q = -30..=20. With
/// a mantissa below 10^18 every product lies in [1e-30, 1e38] or is 0, inside the normal
/// `f32` range, so no range check is needed; other exponents take the general path.
static POW10_F64: [f64; 51] = [
    1e-30, 1e-29, 1e-28, 1e-27, 1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 1e-20, 1e-19, 1e-18,
    1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
    1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
    1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
];

/// 10^k for merging digit runs into the mantissa.
const POW10_U64: [u64; 19] = {
    let mut t = [1u64; 19];
    let mut k = 1;
    while k < t.len() {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// Mantissa digits kept (leading zeros included): below 10^18 < 2^63, so the mantissa converts
/// to `f64` as a signed integer, one instruction with at most one rounding.
const MAX_DIGITS: usize = 18;

/// Distance in `f64` ulps from an `f32` rounding midpoint under which the product is not trusted
/// (its error is under 3.0000002 ulps).
const MIDPOINT_MARGIN: u64 = 4;

// === impl Reader ===

impl Reader<'_> {
    /// Decodes FP32 array elements from the cursor (on an element, whitespace skipped) for as
    /// long as they are numbers this loop reads whole, separated by `,`, appending each as four
    /// little-endian bytes to `out`. Returns how many; the cursor is left just after the last
    /// one, so the caller's array walk sees its `,` or `]` (or the element it has to read
    /// itself). Budget and capacity are the caller's: at most one element per two bytes of
    /// document is written.
    pub(crate) fn fp32_run(&mut self, out: &mut Vec<u8>) -> usize {
        let buf = self.buf;
        let mut at = self.pos;
        let mut n = 0;
        while let Some((v, end)) = element(buf, at) {
            out.extend_from_slice(&v.to_le_bytes());
            n += 1;
            self.pos = end;
            if buf.get(end) != Some(&b',') {
                break;
            }
            at = end + 1;
            while let Some(b' ' | b'\n' | b'\r' | b'\t') = buf.get(at) {
                at += 1;
            }
        }
        n
    }
}

/// Eight bytes from `buf[i..]` as a little-endian word (first byte lowest).
#[inline(always)]
fn word(buf: &[u8], i: usize) -> Option<u64> {
    let chunk: [u8; 8] = buf.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// The number at `buf[start..]` as `f32` and the index just past it, or `None` when it is not
/// one this path reads whole (see the module doc).
#[inline(always)]
fn element(buf: &[u8], start: usize) -> Option<(f32, usize)> {
    let negative = buf.get(start) == Some(&b'-');
    let i = start + usize::from(negative);
    let int = word(buf, i)?;
    // "0." starts most activations, probabilities and normalised inputs: its integer part is
    // known without the digit scan, which also takes the scan off the chain of dependent loads
    // that leads to the next element.
    let (mut m, k) = if int as u16 == u16::from_le_bytes(*b"0.") {
        (0, 1)
    } else {
        let k = leading_digits(int);
        // No digit, eight or more integer digits, or a leading zero ("01").
        if k == 0 || k == 8 || (k > 1 && int as u8 == b'0') {
            return None;
        }
        (first_digits(int, k), k)
    };
    let mut digits = k;
    let mut i = i + k;
    let mut q = 0i64;
    if buf.get(i) == Some(&b'.') {
        i += 1;
        let a = word(buf, i)?;
        let b = word(buf, i + 8)?;
        let ka = leading_digits(a);
        if ka == 0 {
            return None;
        }
        // The second word counts only when the first is all digits: a mask, not a branch.
        let kb = leading_digits(b) & usize::from(ka == 8).wrapping_neg();
        let mut frac = ka + kb;
        digits += frac;
        if digits > MAX_DIGITS {
            return None;
        }
        m = m * POW10_U64[frac] + first_digits(a, ka) * POW10_U64[kb] + first_digits(b, kb);
        if kb == 8 {
            // Sixteen fraction digits and more (Python's 17-digit reprs of FP32 values).
            loop {
                let w = word(buf, i + frac)?;
                let kc = leading_digits(w);
                digits += kc;
                if digits > MAX_DIGITS {
                    return None;
                }
                m = m * POW10_U64[kc] + first_digits(w, kc);
                frac += kc;
                if kc < 8 {
                    break;
                }
            }
        }
        i += frac;
        q = -(frac as i64);
    }
    if let Some(b'e' | b'E') = buf.get(i) {
        let (e, end) = super::exponent(buf, i + 1).ok()?;
        q += e;
        i = end;
    }
    let scale = *POW10_F64.get(usize::try_from(q - MIN_Q).ok()?)?;
    // m < 10^18 < 2^63: converted as a signed integer, one instruction, one rounding at most.
    let v = m as i64 as f64 * scale;
    // Within MIDPOINT_MARGIN ulps of 0x1000_0000 in the 29 bits f32 drops: one subtract and
    // mask maps that window to 0..=2*MIDPOINT_MARGIN.
    let near = v.to_bits().wrapping_sub(0x1000_0000 - MIDPOINT_MARGIN) & 0x1FFF_FFFF;
    if near <= 2 * MIDPOINT_MARGIN {
        return None;
    }
    let bits = (v as f32).to_bits() | u32::from(negative) << 31;
    Some((f32::from_bits(bits), i))
}

#[cfg(test)]
mod tests;
