//! Double-double numbers: an unevaluated sum `hi + lo` carrying about 106 bits.
//! Generated code evaluates residuals in this arithmetic when a stepper runs
//! with compensated summation, so that step increments are computed beyond
//! float64 (see docs/schemes.md §2 on compensated summation).

use std::ops::{Add, Div, Mul, Neg, Sub};

/// `hi + lo` with `|lo| ≤ ulp(hi)/2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dd {
    /// leading part
    pub hi: f64,
    /// trailing part
    pub lo: f64,
}

#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bp = s - a;
    (s, (a - (s - bp)) + (b - bp))
}

#[inline]
fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

impl Dd {
    /// `hi + lo`, renormalized.
    #[inline]
    pub fn new(hi: f64, lo: f64) -> Dd {
        let (h, l) = two_sum(hi, lo);
        Dd { hi: h, lo: l }
    }

    /// The nearest float64.
    #[inline]
    pub fn to_f64(self) -> f64 {
        self.hi + self.lo
    }

    /// Integer power by repeated squaring.
    pub fn powi(self, n: i32) -> Dd {
        let mut base = if n < 0 { Dd::from(1.0) / self } else { self };
        let mut k = n.unsigned_abs();
        let mut acc = Dd::from(1.0);
        while k > 0 {
            if k & 1 == 1 {
                acc = acc * base;
            }
            base = base * base;
            k >>= 1;
        }
        acc
    }

    /// Square root (one Newton correction of the float64 root).
    pub fn sqrt(self) -> Dd {
        if self.hi <= 0.0 {
            return Dd::from(self.hi.sqrt());
        }
        let s = self.hi.sqrt();
        let r = self - Dd::from(s) * Dd::from(s);
        Dd::new(s, r.hi / (2.0 * s))
    }

    /// A function evaluated in float64 only (elementary functions are not
    /// carried to double-double precision).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Dd {
        Dd::from(f(self.to_f64()))
    }
}

impl From<f64> for Dd {
    #[inline]
    fn from(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }
}

impl Add for Dd {
    type Output = Dd;
    #[inline]
    fn add(self, b: Dd) -> Dd {
        let (s, e) = two_sum(self.hi, b.hi);
        let (t, f) = two_sum(self.lo, b.lo);
        let (s, e) = quick_two_sum(s, e + t);
        let (hi, lo) = quick_two_sum(s, e + f);
        Dd { hi, lo }
    }
}

impl Neg for Dd {
    type Output = Dd;
    #[inline]
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
}

impl Sub for Dd {
    type Output = Dd;
    #[inline]
    fn sub(self, b: Dd) -> Dd {
        self + (-b)
    }
}

impl Mul for Dd {
    type Output = Dd;
    #[inline]
    fn mul(self, b: Dd) -> Dd {
        let p = self.hi * b.hi;
        let e = self.hi.mul_add(b.hi, -p);
        let (hi, lo) = quick_two_sum(p, e + (self.hi * b.lo + self.lo * b.hi));
        Dd { hi, lo }
    }
}

impl Div for Dd {
    type Output = Dd;
    #[inline]
    fn div(self, b: Dd) -> Dd {
        let q1 = self.hi / b.hi;
        let r = self - b * Dd::from(q1);
        let q2 = r.hi / b.hi;
        let r = r - b * Dd::from(q2);
        let q3 = r.hi / b.hi;
        let (hi, lo) = quick_two_sum(q1, q2);
        Dd { hi, lo } + Dd::from(q3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_what_float64_drops() {
        let one = Dd::from(1.0);
        let tiny = Dd::from(1e-20);
        let s = (one + tiny) - one;
        assert_eq!(s.to_f64(), 1e-20);
        let third = one / Dd::from(3.0);
        let back = third * Dd::from(3.0) - one;
        assert!(back.to_f64().abs() < 1e-31);
        let r = Dd::from(2.0).sqrt();
        assert!((r * r - Dd::from(2.0)).to_f64().abs() < 1e-31);
        assert!(
            (Dd::from(1.1).powi(5) - Dd::from(1.1) * Dd::from(1.1) * Dd::from(1.1) * Dd::from(1.1) * Dd::from(1.1))
                .to_f64()
                .abs()
                < 1e-30
        );
    }
}
