//! Dense LU with partial pivoting on fixed-size matrices, in place.
//!
//! Ours rather than nalgebra's `lu()` because the latter needs dimension trait
//! bounds that const-generic code cannot state, and because the pivot test
//! here is the singularity test the Newton driver reports.

use nalgebra::{SMatrix, SVector};

/// The matrix is singular to working precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Singular;

/// Solves `a x = b`; `b` is overwritten with `x` and `a` with its factors
/// (the diagonal holding reciprocal pivots).
/// A pivot below `1e3 ε` times the largest entry of `a` counts as singular.
pub fn solve_in_place<const N: usize>(a: &mut SMatrix<f64, N, N>, b: &mut SVector<f64, N>) -> Result<(), Singular> {
    // Plain arrays (column-major: m[col][row]) keep the loops free of
    // nalgebra's generic indexing, which costs more than the arithmetic here.
    let m = &mut a.data.0;
    let v = &mut b.data.0[0];
    let mut big = 0.0f64;
    for col in m.iter() {
        for &x in col.iter() {
            big = big.max(x.abs());
        }
    }
    if big == 0.0 || !big.is_finite() {
        return Err(Singular);
    }
    let tiny = big * 1e3 * f64::EPSILON;
    for k in 0..N {
        let mut p = k;
        let mut pv = m[k][k].abs();
        for i in k + 1..N {
            let x = m[k][i].abs();
            if x > pv {
                p = i;
                pv = x;
            }
        }
        if pv <= tiny {
            return Err(Singular);
        }
        if p != k {
            for col in m.iter_mut() {
                col.swap(k, p);
            }
            v.swap(k, p);
        }
        let inv = 1.0 / m[k][k];
        m[k][k] = inv;
        for i in k + 1..N {
            let f = m[k][i] * inv;
            for j in k + 1..N {
                let u = m[j][k];
                m[j][i] -= f * u;
            }
            v[i] -= f * v[k];
        }
    }
    for i in (0..N).rev() {
        let mut s = v[i];
        for j in i + 1..N {
            s -= m[j][i] * v[j];
        }
        v[i] = s * m[i][i];
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
