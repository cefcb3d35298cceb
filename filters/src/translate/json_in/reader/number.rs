//! Number tokens: the byte-wise scanner behind [`Reader::number`] and the token types it
//! returns ([`Num`], [`Dec`]), converted to `f32` / `f64` by Clinger's fast path where it
//! applies and by std's parser otherwise; the SWAR scanner for short tokens
//! ([`fast_number`]) and the FP32 run decoder ([`fp32_run`]) build on them.

use super::Reader;

mod fast_number;
mod fp32_run;

/// A number token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num<'a> {
    /// Digits only, with an optional leading `-`.
    Int(Dec<'a>),
    /// With a fraction or an exponent.
    Float(Dec<'a>),
    /// `NaN`, `Infinity` or `-Infinity`.
    NonFinite(f64),
}

/// A decimal token: its text, plus the digits already gathered while scanning it, so the
/// common short numbers convert without a second pass over the text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Dec<'a> {
    text: &'a [u8],
    negative: bool,
    /// All digits of the token (integer and fraction part) as one integer, if `exact`.
    mantissa: u64,
    /// Power of ten to scale `mantissa` by.
    exp10: i64,
    /// Whether `mantissa` holds every digit (at most 19 of them).
    exact: bool,
}

/// Powers of ten exactly representable in `f32` (5^10 < 2^24) and `f64` (5^22 < 2^53).
const F32_POW10: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
const F64_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

// === impl Num ===

impl Num<'_> {
    /// As `f32`, correctly rounded from the decimal text: short numbers by Clinger's fast
    /// path (an exact mantissa and power of ten, one rounding), the rest by std's parser
    /// (Eisel-Lemire with a slow-path fallback). Never through `f64`, so no double rounding.
    pub(crate) fn to_f32(self) -> Option<f32> {
        match self {
            Num::Int(d) | Num::Float(d) => d.f32_fast().or_else(|| d.text().parse().ok()),
            Num::NonFinite(v) => Some(v as f32),
        }
    }

    /// As `f64` (the same way, with `f64`'s exact ranges).
    pub(crate) fn to_f64(self) -> Option<f64> {
        match self {
            Num::Int(d) | Num::Float(d) => match d.f64_fast() {
                Some(v) => Some(if d.negative { -v } else { v }),
                None => d.text().parse().ok(),
            },
            Num::NonFinite(v) => Some(v),
        }
    }
}

/// `v` (a correctly rounded `f64`) as `f32`, when that is also the correctly rounded `f32` of
/// the decimal: always, unless `v` sits exactly on the midpoint of two `f32`s (then the
/// decimal may lie on either side of it) or outside the normal `f32` range.
#[inline]
fn narrow_exactly(v: f64) -> Option<f32> {
    let normal = v == 0.0 || (f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&v);
    // The 29 low mantissa bits f32 drops: exactly half of its last place is a midpoint.
    let midpoint = v.to_bits() & 0x1FFF_FFFF == 0x1000_0000;
    (normal && !midpoint).then_some(v as f32)
}

// === impl Dec ===

impl Dec<'_> {
    /// Whether the significand (before any exponent) has a digit other than 0.
    pub(crate) fn has_nonzero_digit(&self) -> bool {
        self.text
            .iter()
            .take_while(|b| !matches!(b, b'e' | b'E'))
            .any(|b| (b'1'..=b'9').contains(b))
    }
}

impl<'a> Dec<'a> {
    /// As `f32` by the fast paths only: Clinger's in `f32` (an exact mantissa and power of
    /// ten, one rounding), else Clinger's in `f64` narrowed when that cannot double-round.
    #[inline]
    fn f32_fast(&self) -> Option<f32> {
        if self.exact && self.mantissa <= 1 << 24 && (-10..=10).contains(&self.exp10) {
            let m = self.mantissa as f32;
            let p = F32_POW10[self.exp10.unsigned_abs() as usize];
            let v = if self.exp10 < 0 { m / p } else { m * p };
            return Some(if self.negative { -v } else { v });
        }
        let v = self.f64_fast().and_then(narrow_exactly)?;
        Some(if self.negative { -v } else { v })
    }

    /// The magnitude as `f64` by Clinger's fast path (exact mantissa and power of ten, one
    /// correctly rounded operation), if it applies.
    #[inline]
    fn f64_fast(&self) -> Option<f64> {
        if self.exact && self.mantissa <= 1 << 53 && (-22..=22).contains(&self.exp10) {
            let m = self.mantissa as f64;
            let p = F64_POW10[self.exp10.unsigned_abs() as usize];
            Some(if self.exp10 < 0 { m / p } else { m * p })
        } else {
            None
        }
    }

    /// The token's text.
    pub(crate) fn text(&self) -> &'a str {
        // The scanner accepted only ASCII digits, signs, '.', 'e' and 'E'.
        std::str::from_utf8(self.text).unwrap_or_default()
    }

    /// An integer token as `u64` (non-negative and in range).
    pub(crate) fn as_u64(&self) -> Option<u64> {
        if self.negative {
            return None;
        }
        if self.exact && self.exp10 == 0 {
            return Some(self.mantissa);
        }
        self.text().parse().ok()
    }

    /// An integer token as `i64` (in range).
    pub(crate) fn as_i64(&self) -> Option<i64> {
        if self.exact && self.exp10 == 0 {
            return if self.negative {
                0i64.checked_sub_unsigned(self.mantissa)
            } else {
                i64::try_from(self.mantissa).ok()
            };
        }
        self.text().parse().ok()
    }

    /// Whether the token starts with `-`.
    pub(crate) fn is_negative(&self) -> bool {
        self.negative
    }
}

// === impl Reader ===

impl<'a> Reader<'a> {
    /// A number token (strict JSON grammar, plus `NaN`, `Infinity`, `-Infinity`).
    pub(crate) fn number(&mut self) -> Result<Num<'a>, String> {
        self.ws();
        // The non-finite tokens are checked only when the first bytes could start one, so
        // ordinary numbers pay a byte compare, not three literal matches.
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        if let [b'N' | b'I', ..] | [b'-', b'I', ..] = rest {
            if self.literal(b"NaN") {
                return Ok(Num::NonFinite(f64::NAN));
            }
            if self.literal(b"Infinity") {
                return Ok(Num::NonFinite(f64::INFINITY));
            }
            if self.literal(b"-Infinity") {
                return Ok(Num::NonFinite(f64::NEG_INFINITY));
            }
        }
        let start = self.pos;
        let b = self.buf;
        if let Some(s) = fast_number::scan(b, start) {
            self.pos = s.end;
            return Ok(if s.float {
                Num::Float(s.dec)
            } else {
                Num::Int(s.dec)
            });
        }
        let mut i = start;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // Digits gathered into one integer while scanning; past 19 the token is left to the
        // slow path. Plain loops over locals: this is the innermost loop of tensor decoding.
        let mut mantissa = 0u64;
        let mut count = 0u32;
        let int_start = i;
        i = digits(b, i, &mut mantissa, &mut count);
        let n = i - int_start;
        if n == 0 || (n > 1 && b.get(int_start) == Some(&b'0')) {
            self.pos = i;
            return Err(self.error("invalid number"));
        }
        let mut float = false;
        let mut exp10 = 0i64;
        if b.get(i) == Some(&b'.') {
            i += 1;
            float = true;
            let frac_start = i;
            i = digits(b, i, &mut mantissa, &mut count);
            let frac = i - frac_start;
            if frac == 0 {
                self.pos = i;
                return Err(self.error("invalid number"));
            }
            exp10 = -(frac as i64);
        }
        let exact = count <= 19;
        if let Some(b'e' | b'E') = b.get(i) {
            float = true;
            match exponent(b, i + 1) {
                Ok((e, end)) => {
                    exp10 += e;
                    i = end;
                }
                Err(end) => {
                    self.pos = end;
                    return Err(self.error("invalid number"));
                }
            }
        }
        self.pos = i;
        let dec = Dec {
            text: b.get(start..i).unwrap_or_default(),
            negative,
            mantissa,
            exp10,
            exact,
        };
        Ok(if float {
            Num::Float(dec)
        } else {
            Num::Int(dec)
        })
    }
}

/// Adds the digit run at `b[i..]` to `mantissa` (its first 19 digits; `count` counts them all)
/// and returns where the run ends. Inlined: the innermost loop of the byte-wise scanner.
#[inline(always)]
fn digits(b: &[u8], mut i: usize, mantissa: &mut u64, count: &mut u32) -> usize {
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if *count < 19 {
            *mantissa = *mantissa * 10 + u64::from(d);
        }
        *count += 1;
        i += 1;
    }
    i
}

/// The exponent whose optional sign and digits start at `b[i]` (just after `e`/`E`), as
/// (signed value, end). `Err(end)` when no digit follows. Clamped: anything this large is out
/// of every float range anyway.
#[inline(always)]
fn exponent(b: &[u8], mut i: usize) -> Result<(i64, usize), usize> {
    let sign = match b.get(i) {
        Some(b'-') => {
            i += 1;
            -1
        }
        Some(b'+') => {
            i += 1;
            1
        }
        _ => 1,
    };
    let from = i;
    let mut e = 0i64;
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        e = (e * 10 + i64::from(d)).min(1 << 20);
        i += 1;
    }
    if i == from {
        return Err(i);
    }
    Ok((sign * e, i))
}
