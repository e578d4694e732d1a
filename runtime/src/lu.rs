//! Dense LU with partial pivoting on fixed-size matrices, in place.
//!
//! Ours rather than nalgebra's `lu()` because the latter needs dimension trait
//! bounds that const-generic code cannot state, and because the pivot test
//! here is the singularity test the Newton driver reports.

use nalgebra::{SMatrix, SVector};

/// The matrix is singular to working precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Singular;

/// An LU factorization with partial pivoting of a fixed-size matrix.
#[derive(Clone, Copy, Debug)]
pub struct Lu<const N: usize> {
    /// factors, column-major (`m[col][row]`); the diagonal holds reciprocal pivots
    m: [[f64; N]; N],
    /// row interchanges, in order
    perm: [usize; N],
}

impl<const N: usize> Lu<N> {
    /// Factors `a`. A pivot below `1e3 ε` times the largest entry counts as singular.
    pub fn factor(a: &SMatrix<f64, N, N>) -> Result<Self, Singular> {
        // Plain arrays keep the loops free of nalgebra's generic indexing,
        // which costs more than the arithmetic at these sizes.
        let mut m = a.data.0;
        let mut perm = [0usize; N];
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
            perm[k] = p;
            if p != k {
                for col in m.iter_mut() {
                    col.swap(k, p);
                }
            }
            let inv = 1.0 / m[k][k];
            m[k][k] = inv;
            for i in k + 1..N {
                let f = m[k][i] * inv;
                m[k][i] = f;
                for j in k + 1..N {
                    let u = m[j][k];
                    m[j][i] -= f * u;
                }
            }
        }
        Ok(Self { m, perm })
    }

    /// Overwrites `b` with the solution of `a x = b`.
    pub fn solve(&self, b: &mut SVector<f64, N>) {
        let v = &mut b.data.0[0];
        let m = &self.m;
        // Whole rows were swapped during factoring, so PA = LU: permute first.
        for k in 0..N {
            v.swap(k, self.perm[k]);
        }
        for k in 0..N {
            for i in k + 1..N {
                v[i] -= m[k][i] * v[k];
            }
        }
        for i in (0..N).rev() {
            let mut s = v[i];
            for j in i + 1..N {
                s -= m[j][i] * v[j];
            }
            v[i] = s * m[i][i];
        }
    }
}

/// Solves `a x = b`; `b` is overwritten with `x`.
pub fn solve_in_place<const N: usize>(a: &SMatrix<f64, N, N>, b: &mut SVector<f64, N>) -> Result<(), Singular> {
    Lu::factor(a)?.solve(b);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_and_detects_singularity() {
        let a = SMatrix::<f64, 3, 3>::new(0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0);
        let a0 = a;
        let x = SVector::<f64, 3>::new(1.0, -2.0, 0.5);
        let mut b = a0 * x;
        solve_in_place(&a, &mut b).unwrap();
        assert!((b - x).norm() < 1e-14);
        let s = SMatrix::<f64, 2, 2>::new(1.0, 2.0, 2.0, 4.0);
        let mut c = SVector::<f64, 2>::new(1.0, 1.0);
        assert_eq!(solve_in_place(&s, &mut c), Err(Singular));
    }

    #[test]
    fn agrees_with_nalgebra_on_pivoting_systems() {
        let mut seed = 3u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for _ in 0..50 {
            let a = SMatrix::<f64, 6, 6>::from_fn(|_, _| rnd());
            let b = SVector::<f64, 6>::from_fn(|_, _| rnd());
            let expect = a.lu().solve(&b).unwrap();
            let mut x = b;
            solve_in_place(&a, &mut x).unwrap();
            assert!((x - expect).amax() < 1e-10 * (1.0 + expect.amax()));
        }
    }
}
