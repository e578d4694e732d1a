//! Dense LU with partial pivoting on fixed-size matrices, in place.
//!
//! Ours rather than nalgebra's `lu()` because the latter needs dimension trait
//! bounds that const-generic code cannot state, and because the pivot test
//! here is the singularity test the Newton driver reports.

use nalgebra::{SMatrix, SVector};

/// The matrix is singular to working precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Singular;

/// Solves `a x = b`; `b` is overwritten with `x` and `a` with its factors.
/// A pivot below `1e3 ε` times the largest entry of `a` counts as singular.
pub fn solve_in_place<const N: usize>(
    a: &mut SMatrix<f64, N, N>,
    b: &mut SVector<f64, N>,
) -> Result<(), Singular> {
    let big = a.amax();
    if big == 0.0 || !big.is_finite() {
        return Err(Singular);
    }
    let tiny = big * 1e3 * f64::EPSILON;
    for k in 0..N {
        let mut p = k;
        let mut pv = a[(k, k)].abs();
        for i in k + 1..N {
            let v = a[(i, k)].abs();
            if v > pv {
                p = i;
                pv = v;
            }
        }
        if pv <= tiny {
            return Err(Singular);
        }
        if p != k {
            a.swap_rows(k, p);
            b.swap_rows(k, p);
        }
        let d = a[(k, k)];
        for i in k + 1..N {
            let f = a[(i, k)] / d;
            if f == 0.0 {
                continue;
            }
            a[(i, k)] = f;
            for j in k + 1..N {
                let u = a[(k, j)];
                a[(i, j)] -= f * u;
            }
            let bk = b[k];
            b[i] -= f * bk;
        }
    }
    for i in (0..N).rev() {
        let mut s = b[i];
        for j in i + 1..N {
            s -= a[(i, j)] * b[j];
        }
        b[i] = s / a[(i, i)];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_and_detects_singularity() {
        let mut a = SMatrix::<f64, 3, 3>::new(0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0);
        let a0 = a;
        let x = SVector::<f64, 3>::new(1.0, -2.0, 0.5);
        let mut b = a0 * x;
        solve_in_place(&mut a, &mut b).unwrap();
        assert!((b - x).norm() < 1e-14);
        let mut s = SMatrix::<f64, 2, 2>::new(1.0, 2.0, 2.0, 4.0);
        let mut c = SVector::<f64, 2>::new(1.0, 1.0);
        assert_eq!(solve_in_place(&mut s, &mut c), Err(Singular));
    }
}
