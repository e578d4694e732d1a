//! The driven test problems the time-order and composition tests share,
//! with their references: RK4 of equations derived by hand.

/// The drive `F₀ cos ωt`, `F₀ = 0.8`, `ω = 1.3`.
pub fn drive(t: f64) -> f64 {
    0.8 * (1.3 * t).cos()
}

pub use super::rk4::rk4;

/// `x(t_end)` of the Duffing oscillator `x'' + 0.1x' + x + 0.5x³ = drive(t)`
/// from `x = 0.5` at rest, by RK4 in `n` steps.
pub fn duffing_reference(t_end: f64, n: usize) -> Vec<f64> {
    let f = |t: f64, y: &[f64]| vec![y[1], -0.1 * y[1] - y[0] - 0.5 * y[0].powi(3) + drive(t)];
    rk4(f, &[0.5, 0.0], t_end, n)[..1].to_vec()
}

/// The bob position at `t_end` of the spherical pendulum (r = 1, m = 1,
/// g = 9.81) driven along x by `drive(t)`, in Cartesian coordinates with the
/// multiplier of the twice-differentiated constraint,
/// `λ = −(m|v|² + ⟨x, F e₁ − m g e₃⟩)/r²`; RK4 in `n` steps.
pub fn pendulum_reference(t_end: f64, n: usize) -> Vec<f64> {
    let f = |t: f64, y: &[f64]| {
        let (x, v) = (&y[..3], &y[3..]);
        let force = [drive(t), 0.0, -9.81];
        let lam = -(v.iter().map(|a| a * a).sum::<f64>() + x.iter().zip(&force).map(|(a, b)| a * b).sum::<f64>())
            / x.iter().map(|a| a * a).sum::<f64>();
        let mut d = v.to_vec();
        d.extend((0..3).map(|i| force[i] + lam * x[i]));
        d
    };
    rk4(f, &[0.6, 0.0, -0.8, 0.0, 0.7, 0.0], t_end, n)[..3].to_vec()
}

/// Designs a discrete LQR (`Q = I`, `R = I`) on the step's linearization
/// `(A, B)` at the equilibrium named `up`, then closes the loop on the
/// nonlinear step from `up` with `z[1]` moved by 1e-6, for `steps` steps.
/// Returns the designed closed loop's spectral radius, the largest relative
/// deviation of the run from the designed linear closed loop
/// `(A − BK)^k δz₀` (second order in δz ≈ 1e-6 when `(A, B)` is complete; an
/// O(1) difference when the step depends on something `(A, B)` misses), and
/// `|δz|` at the end relative to its start.
pub fn lqr_follows_design(sys: &hamel_load::System, h: f64, steps: usize, label: &str) -> (f64, f64, f64) {
    use hamel_runtime::control::dlqr;
    use hamel_runtime::nalgebra::{DMatrix, DVector};
    let up = sys.initial("up").unwrap();
    let mut s = hamel_runtime::DynStepper::new(sys, h).unwrap();
    s.set_inputs(&[0.0]).unwrap();
    let mut at = up.clone();
    let (a, b) = s.step_linearized(&mut at, true).unwrap();
    assert!((&at.z - &up.z).amax() < 1e-14, "{label}: `up` is an equilibrium");
    let n = a.nrows();
    let lqr = dlqr(
        &a,
        &b,
        &DMatrix::identity(n, n),
        &DMatrix::identity(1, 1),
        1e-12,
        100_000,
    )
    .unwrap();
    let closed = &a - &b * &lqr.k;
    let mut st = up.clone();
    st.z[1] += 1e-6;
    let mut lin: DVector<f64> = &st.z - &up.z;
    let mut worst = 0.0f64;
    for _ in 0..steps {
        let dz: DVector<f64> = &st.z - &up.z;
        let u = -(&lqr.k * &dz)[0];
        s.step_with_inputs(&mut st, &[u]).unwrap();
        lin = &closed * &lin;
        worst = worst.max((&st.z - &up.z - &lin).norm() / lin.norm());
    }
    (lqr.spectral_radius, worst, (&st.z - &up.z).norm() / 1e-6)
}
