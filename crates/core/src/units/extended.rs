//! Just enough x87 80-bit `long double` arithmetic to print numbers with
//! the same digits as the original tool.
//!
//! The original formats every unit-bearing figure in `long double`: it
//! divides by 1000 (or 1024, or 60) with a 64-bit significand and then
//! prints with `%.2Lf`. An amount whose exact decimal sits on a rounding
//! tie, say 1005 µs = 1.005 ms, lands slightly above or below the tie
//! depending on the precision of the division, so `f64` arithmetic prints
//! `1.00ms` where the original prints `1.01ms` (or the other way round).
//! Ties like that are common for integer microseconds, so this module
//! redoes the division with a 64-bit significand, exactly as the hardware
//! rounds it, and converts to decimal exactly.

/// A finite extended-precision number: `(-1)^neg × mant × 2^exp`, with the
/// significand normalised so that its top bit is set (or zero for 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extended {
    neg: bool,
    mant: u64,
    exp: i32,
}

impl Extended {
    const ZERO: Extended = Extended {
        neg: false,
        mant: 0,
        exp: 0,
    };

    /// The exact value of a finite `f64`, as a C conversion to
    /// `long double` gives it (every `f64` is representable).
    pub(crate) fn from_f64(x: f64) -> Extended {
        debug_assert!(x.is_finite(), "callers print non-finite values themselves");
        let bits = x.to_bits();
        let neg = bits >> 63 == 1;
        let field = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        let (mant, exp) = if field == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, field - 1075)
        };
        Extended {
            neg,
            ..Extended::normalised(mant, exp)
        }
    }

    /// The exact value of an integer: a 64-bit significand holds any `u64`,
    /// which is why the original could print byte counts exactly.
    pub(crate) fn from_u64(n: u64) -> Extended {
        Extended::normalised(n, 0)
    }

    fn normalised(mant: u64, exp: i32) -> Extended {
        if mant == 0 {
            return Extended::ZERO;
        }
        let shift = mant.leading_zeros();
        Extended {
            neg: false,
            mant: mant << shift,
            exp: exp - shift as i32,
        }
    }

    /// `self / d`, rounded to nearest with ties to even, as the x87 unit
    /// does at its default 64-bit precision.
    pub(crate) fn div(self, d: u64) -> Extended {
        assert!(d > 0, "division by zero");
        if self.mant == 0 {
            return self;
        }
        let num = u128::from(self.mant) << 64;
        let (q, r) = (num / u128::from(d), num % u128::from(d));
        // q is at least 2^127 / 2^64, so at least 64 bits are significant.
        let drop = (128 - q.leading_zeros()) - 64;
        let mut kept = q >> drop;
        if round_up(q, drop, r != 0) {
            kept += 1;
        }
        let (kept, drop) = if kept >> 64 != 0 {
            (kept >> 1, drop + 1)
        } else {
            (kept, drop)
        };
        Extended {
            neg: self.neg,
            mant: kept as u64,
            exp: self.exp - 64 + drop as i32,
        }
    }

    /// `self >= other`, for the comparisons the unit loop makes against a
    /// positive threshold.
    pub(crate) fn at_least(self, other: Extended) -> bool {
        match (self.is_neg(), other.is_neg()) {
            (false, true) => true,
            (true, false) => false,
            (false, false) => self.magnitude_cmp(other).is_ge(),
            (true, true) => self.magnitude_cmp(other).is_le(),
        }
    }

    fn is_neg(self) -> bool {
        self.neg && self.mant != 0
    }

    fn magnitude_cmp(self, other: Extended) -> std::cmp::Ordering {
        match (self.mant == 0, other.mant == 0) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            (false, false) => (self.exp, self.mant).cmp(&(other.exp, other.mant)),
        }
    }

    /// The decimal text `printf("%.*Lf", decimals, x)` prints: the exact
    /// value rounded to nearest, exact ties to even.
    pub(crate) fn to_fixed(self, decimals: u32) -> String {
        let sign = if self.neg { "-" } else { "" };
        let unit = 10_u128.pow(decimals);
        let Some(units) = self.scaled_units(unit) else {
            // Only above 2^50 or so; nothing the report prints gets there.
            let approx = self.mant as f64 * 2f64.powi(self.exp);
            return format!("{sign}{approx:.prec$}", prec = decimals as usize);
        };
        let (whole, frac) = (units / unit, units % unit);
        if decimals == 0 {
            format!("{sign}{whole}")
        } else {
            format!("{sign}{whole}.{frac:0width$}", width = decimals as usize)
        }
    }

    /// `|self| × unit`, rounded to an integer; `None` if it would overflow.
    fn scaled_units(self, unit: u128) -> Option<u128> {
        let scaled = u128::from(self.mant) * unit;
        if self.exp >= 0 {
            return scaled
                .checked_shl(self.exp as u32)
                .filter(|v| v >> self.exp == scaled);
        }
        let drop = self.exp.unsigned_abs();
        if drop >= 128 {
            // Below 2^74 / 2^128: far under half a unit.
            return Some(0);
        }
        let whole = scaled >> drop;
        Some(if round_up(scaled, drop, false) {
            whole + 1
        } else {
            whole
        })
    }
}

/// Whether dropping the low `drop` bits of `v` rounds up, to nearest with
/// ties to even; `sticky` says non-zero bits lie below `v` itself.
fn round_up(v: u128, drop: u32, sticky: bool) -> bool {
    if drop == 0 {
        return false;
    }
    let half = 1_u128 << (drop - 1);
    let rest = v & ((half << 1) - 1);
    let odd = (v >> drop) & 1 == 1;
    rest > half || (rest == half && (sticky || odd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(x: f64, decimals: u32) -> String {
        Extended::from_f64(x).to_fixed(decimals)
    }

    #[test]
    fn exact_values_print_like_printf() {
        assert_eq!(fixed(0.0, 2), "0.00");
        assert_eq!(fixed(500.0, 2), "500.00");
        assert_eq!(fixed(6.602, 2), "6.60");
        assert_eq!(fixed(1.999, 2), "2.00");
        assert_eq!(fixed(-0.001, 2), "-0.00");
        assert_eq!(fixed(1e-300, 2), "0.00");
        assert_eq!(fixed(123456789.0, 0), "123456789");
    }

    #[test]
    fn exact_ties_round_to_even() {
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(0.375, 2), "0.38");
        assert_eq!(fixed(1.5, 0), "2");
        assert_eq!(fixed(2.5, 0), "2");
    }

    #[test]
    fn division_rounds_with_a_64_bit_significand() {
        // 855/1000 rounds above the tie in 64 bits, below it in 53 bits;
        // 905/1000 the other way round.
        assert_eq!(Extended::from_u64(855).div(1000).to_fixed(2), "0.86");
        assert_eq!(format!("{:.2}", 855.0_f64 / 1000.0), "0.85");
        assert_eq!(Extended::from_u64(905).div(1000).to_fixed(2), "0.90");
        assert_eq!(format!("{:.2}", 905.0_f64 / 1000.0), "0.91");
    }

    #[test]
    fn exact_divisions_stay_exact() {
        assert_eq!(
            Extended::from_u64(3 << 20).div(1 << 20),
            Extended::from_u64(3)
        );
        assert_eq!(
            Extended::from_u64(u64::MAX).div(1),
            Extended::from_u64(u64::MAX)
        );
        assert_eq!(Extended::from_u64(1125).div(1000).to_fixed(2), "1.12");
    }

    #[test]
    fn comparisons_are_exact() {
        let threshold = Extended::from_f64(1024.0 * 0.85);
        assert!(!Extended::from_f64(870.3999999999999).at_least(threshold));
        assert!(Extended::from_f64(870.4).at_least(threshold));
        assert!(Extended::from_u64(0).at_least(Extended::from_f64(-0.0)));
        assert!(!Extended::from_f64(-1.0).at_least(Extended::from_u64(0)));
        assert!(Extended::from_f64(-1.0).at_least(Extended::from_f64(-2.0)));
    }
}
