//! Discrete linear-quadratic regulation on the step map's linearization.
//!
//! A scheme's state is redundant: it carries directions the dynamics cannot
//! leave or does not see (the length `‖γ‖` conserved for any value, momenta
//! along constraint normals that multipliers absorb). Their eigenvalues of `A`
//! (1 or 0) lie out of the inputs' reach, so the Riccati equation on the full
//! state has no stabilizing solution. The design therefore runs in an
//! orthonormal basis `T` of the tangent space at the equilibrium: the null
//! space of the derivatives of the relations the state satisfies (see
//! docs/schemes.md §8): `A_r = TᵀAT`, `B_r = TᵀB`, feedback
//! `u = u* − K Tᵀ (z − z*)`.

use nalgebra::{DMatrix, DefaultAllocator, Dim};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::state::StateOf;
use crate::system::StepperOf;

/// An orthonormal basis of the null space of `rows` (one relation
/// derivative per row), from the singular value decomposition; directions
/// with a singular value below `1e-10 · σ_max` count as null.
pub fn tangent_basis(rows: &DMatrix<f64>) -> DMatrix<f64> {
    let n = rows.ncols();
    if rows.nrows() == 0 {
        return DMatrix::identity(n, n);
    }
    // The null space of R is the eigenspace of RᵀR for eigenvalue 0.
    let rtr = rows.transpose() * rows;
    let eig = nalgebra::SymmetricEigen::new(rtr);
    let top = eig.eigenvalues.iter().fold(0.0f64, |m, &v| m.max(v.abs()));
    let cols: Vec<_> = (0..n)
        .filter(|&i| eig.eigenvalues[i].abs() <= 1e-12 * top.max(f64::MIN_POSITIVE))
        .map(|i| eig.eigenvectors.column(i).into_owned())
        .collect();
    DMatrix::from_columns(&cols)
}

/// The largest modulus of the eigenvalues of a square matrix.
pub fn spectral_radius(a: &DMatrix<f64>) -> f64 {
    a.complex_eigenvalues().iter().map(|c| c.norm()).fold(0.0, f64::max)
}

/// A discrete LQR gain and the Riccati solution it came from.
#[derive(Clone, Debug)]
pub struct Lqr {
    /// feedback gain `K` (`u = −K x`)
    pub k: DMatrix<f64>,
    /// the solution `P` of the discrete algebraic Riccati equation
    pub p: DMatrix<f64>,
    /// Riccati iterations until `‖ΔP‖ ≤ tol ‖P‖`
    pub iterations: usize,
    /// spectral radius of the closed loop `A − BK`
    pub spectral_radius: f64,
}

/// Solves the discrete LQR problem `min Σ xᵀQx + uᵀRu`, `x' = Ax + Bu`, by
/// the Riccati iteration `K = (R + BᵀPB)⁻¹BᵀPA`, `P ← Q + Aᵀ P (A − BK)` from
/// `P = Q` until `‖ΔP‖ ≤ tol ‖P‖` (Frobenius norms). Fails when the iteration
/// does not settle within `max_iterations` (an unstabilizable pair: design
/// in the tangent space, see [`tangent_basis`]) or `R + BᵀPB` is singular.
pub fn dlqr(
    a: &DMatrix<f64>,
    b: &DMatrix<f64>,
    q: &DMatrix<f64>,
    r: &DMatrix<f64>,
    tol: f64,
    max_iterations: usize,
) -> Result<Lqr, StepError> {
    let n = a.nrows();
    if a.ncols() != n || b.nrows() != n || q.shape() != (n, n) || r.shape() != (b.ncols(), b.ncols()) {
        return Err(StepError::InvalidInput(format!(
            "dlqr: inconsistent sizes A {:?}, B {:?}, Q {:?}, R {:?}",
            a.shape(),
            b.shape(),
            q.shape(),
            r.shape()
        )));
    }
    let gain = |p: &DMatrix<f64>| -> Result<DMatrix<f64>, StepError> {
        let s = r + b.transpose() * p * b;
        let rhs = b.transpose() * p * a;
        s.lu()
            .solve(&rhs)
            .ok_or_else(|| StepError::InvalidInput("dlqr: R + BᵀPB is singular".into()))
    };
    let mut p = q.clone();
    for it in 1..=max_iterations {
        let k = gain(&p)?;
        let next = q + a.transpose() * &p * (a - b * &k);
        // Symmetrize against round-off drift.
        let next = (&next + next.transpose()) * 0.5;
        let change = (&next - &p).norm();
        p = next;
        if !change.is_finite() {
            break;
        }
        if change <= tol * p.norm() {
            let k = gain(&p)?;
            let rho = spectral_radius(&(a - b * &k));
            return Ok(Lqr {
                k,
                p,
                iterations: it,
                spectral_radius: rho,
            });
        }
    }
    Err(StepError::InvalidInput(format!(
        "dlqr: the Riccati iteration did not settle in {max_iterations} iterations (‖P‖ = {:.3e}); is (A, B) stabilizable? Design in the tangent space of the constraints (control::tangent_basis)",
        p.norm()
    )))
}

/// A discrete LQR designed at an equilibrium of a step map (see
/// [`lqr_at_equilibrium`]): the linearization, the tangent basis, the
/// reduced problem and its solution, and the feedback gain on the full state.
#[derive(Clone, Debug)]
pub struct EquilibriumLqr {
    /// `A = ∂z'/∂z` at the equilibrium
    pub a: DMatrix<f64>,
    /// `B = ∂z'/∂u` at the equilibrium (one column per input)
    pub b: DMatrix<f64>,
    /// the orthonormal tangent basis `T` of the relations at `z*`
    pub t: DMatrix<f64>,
    /// `A_r = TᵀAT`
    pub a_r: DMatrix<f64>,
    /// `B_r = TᵀB`
    pub b_r: DMatrix<f64>,
    /// the design in the tangent space (gain `K`, Riccati solution, closed-loop radius)
    pub lqr: Lqr,
    /// the gain on the full state, `K Tᵀ`: the feedback is `u = u* − gain (z − z*)`
    pub gain: DMatrix<f64>,
    /// `max |Φ(z*, u*) − z*|`: how far the state given is from an equilibrium
    pub residual: f64,
}

/// The discrete LQR at the equilibrium `z*` (`equilibrium`) with inputs
/// `u*`: one step from `z*` gives `(A, B)`; the design runs in an
/// orthonormal basis `T` of the null space of `relations` (one derivative
/// of a relation the state satisfies per row, e.g. `2γ*ᵀ` for `‖γ‖ = 1`;
/// none: the whole state) with weights `TᵀQT` and `R` (`q` on the full
/// state), by [`dlqr`] with `tol` and `max_iterations`. The stepper must
/// provide sensitivities ([`StepperOf::step_linearized`]); its inputs are
/// left at `u*`.
#[allow(clippy::too_many_arguments)]
pub fn lqr_at_equilibrium<S, Z, X, R>(
    stepper: &mut StepperOf<'_, S, Z, X, R>,
    equilibrium: &StateOf<Z, X>,
    u_star: &[f64],
    relations: &DMatrix<f64>,
    q: &DMatrix<f64>,
    r: &DMatrix<f64>,
    tol: f64,
    max_iterations: usize,
) -> Result<EquilibriumLqr, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    R: std::ops::Deref<Target = S>,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    stepper.set_inputs(u_star)?;
    let mut after = equilibrium.clone();
    let (a, b) = stepper.step_linearized(&mut after, true)?;
    let residual = (&after.z - &equilibrium.z).amax();
    let n = a.nrows();
    let a = DMatrix::from_column_slice(n, n, a.as_slice());
    if relations.ncols() != n || q.shape() != (n, n) {
        return Err(StepError::InvalidInput(format!(
            "lqr_at_equilibrium: the state has {n} components; relations {:?}, Q {:?}",
            relations.shape(),
            q.shape()
        )));
    }
    let t = tangent_basis(relations);
    let a_r = t.transpose() * &a * &t;
    let b_r = t.transpose() * &b;
    let q_r = t.transpose() * q * &t;
    let lqr = dlqr(&a_r, &b_r, &q_r, r, tol, max_iterations)?;
    let gain = &lqr.k * t.transpose();
    Ok(EquilibriumLqr {
        a,
        b,
        t,
        a_r,
        b_r,
        lqr,
        gain,
        residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stabilizes_a_discrete_double_integrator() {
        let h = 0.1;
        let a = DMatrix::from_row_slice(2, 2, &[1.0, h, 0.0, 1.0]);
        let b = DMatrix::from_row_slice(2, 1, &[0.5 * h * h, h]);
        let q = DMatrix::identity(2, 2);
        let r = DMatrix::identity(1, 1);
        let lqr = dlqr(&a, &b, &q, &r, 1e-13, 10_000).unwrap();
        assert!(lqr.spectral_radius < 1.0);
        // P solves the Riccati equation.
        let k = &lqr.k;
        let res = &q + a.transpose() * &lqr.p * (&a - &b * k) - &lqr.p;
        assert!(res.norm() <= 1e-9 * lqr.p.norm(), "{}", res.norm());
    }

    #[test]
    fn an_unreachable_unit_eigenvalue_is_refused() {
        // The second state is a conserved quantity the input cannot move.
        let a = DMatrix::from_row_slice(2, 2, &[1.1, 0.0, 0.0, 1.0]);
        let b = DMatrix::from_row_slice(2, 1, &[1.0, 0.0]);
        let e = dlqr(&a, &b, &DMatrix::identity(2, 2), &DMatrix::identity(1, 1), 1e-13, 500);
        assert!(e.is_err());
    }

    #[test]
    fn the_tangent_basis_is_orthonormal_and_null() {
        let rows = DMatrix::from_row_slice(1, 4, &[0.0, 0.0, 2.0, 0.0]);
        let t = tangent_basis(&rows);
        assert_eq!(t.ncols(), 3);
        assert!((t.transpose() * &t - DMatrix::identity(3, 3)).norm() < 1e-14);
        assert!((&rows * &t).norm() < 1e-14);
    }
}
