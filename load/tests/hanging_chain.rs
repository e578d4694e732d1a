//! Long chains are physically right: the small planar oscillations of a
//! hanging chain of N equal point masses on massless links of length l
//! (`models/spherical_chain_cartesian.hamel`, N = 32 and 64) have the normal
//! modes of its linearization, derived here by hand and solved independently
//! of hamel.
//!
//! With θ_j the angle of link j from the downward vertical, bob i sits at
//! `Σ_{j≤i} l (sin θ_j, 0, −cos θ_j)`; to second order
//! `T = ½ θ̇ᵀ M θ̇`, `M_jk = m l² (N + 1 − max(j, k))` (links j and k both
//! move the bobs from max(j, k) on), and `V = ½ θᵀ K θ`,
//! `K = diag(m g l (N + 1 − j))` (link j carries the bobs from j on). The
//! normal modes solve `K v = ω² M v` — Daniel Bernoulli's hanging chain
//! (1733), in Goldstein's normal-mode form (Classical Mechanics, 3rd ed.,
//! §6.2); as N → ∞ at fixed length L = N l they tend to the continuous
//! chain's `ω_n = (j_{0,n}/2) √(g/L)`, j_{0,n} the zeros of the Bessel J₀.

use hamel_load::{compile, read_model, run, Backend, RunOptions, System};
use hamel_runtime::nalgebra::{DMatrix, SymmetricEigen};

const M: f64 = 1.0;
const L: f64 = 1.0;
const G: f64 = 9.81;

/// Normal frequencies (ascending) and mode shapes (link angles) of the
/// hanging chain of `n` links.
fn normal_modes(n: usize) -> Vec<(f64, Vec<f64>)> {
    let mass = DMatrix::from_fn(n, n, |j, k| M * L * L * (n - j.max(k)) as f64);
    let stiff = DMatrix::from_fn(n, n, |j, k| if j == k { M * G * L * (n - j) as f64 } else { 0.0 });
    // K v = ω² M v with M = C Cᵀ: (C⁻¹ K C⁻ᵀ) y = ω² y, v = C⁻ᵀ y.
    let c = mass.cholesky().expect("the mass matrix is positive definite").l();
    let ci = c.clone().try_inverse().unwrap();
    let eig = SymmetricEigen::new(&ci * stiff * ci.transpose());
    let mut modes: Vec<(f64, Vec<f64>)> = (0..n)
        .map(|i| {
            let v = ci.transpose() * eig.eigenvectors.column(i);
            (eig.eigenvalues[i].sqrt(), v.iter().copied().collect())
        })
        .collect();
    modes.sort_by(|a, b| a.0.total_cmp(&b.0));
    modes
}

/// The frequency of the planar motion started at rest from `theta` (link
/// angles), measured by hamel's RATTLE step on the Cartesian chain: from the
/// zero crossings of the last bob's horizontal position over `periods`
/// periods of the expected frequency `omega`.
fn measured_frequency(sys: &System, theta: &[f64], omega: f64, periods: f64) -> f64 {
    let n = theta.len();
    let names = &sys.compiled().coordinates;
    let mut q = vec![0.0; names.len()];
    let mut bob = [0.0f64; 3];
    for (i, th) in theta.iter().enumerate() {
        bob = [bob[0] + L * th.sin(), 0.0, bob[2] - L * th.cos()];
        for (c, x) in bob.iter().enumerate() {
            let at = names.iter().position(|s| *s == format!("x[{}][{c}]", i + 1)).unwrap();
            q[at] = *x;
        }
    }
    let v = vec![0.0; sys.compiled().velocities.len()];
    let state = hamel_runtime::Kernels::initial_state(sys, &q, &v).unwrap();
    let period = 2.0 * std::f64::consts::PI / omega;
    let h = period / 400.0;
    let steps = (periods * 400.0) as u64;
    let opt = RunOptions {
        h,
        steps,
        compensated: false,
        record_every: 1,
        inputs: None,
        newton: Default::default(),
    };
    let r = run(sys, state, None, &opt).unwrap();
    let last = names.iter().position(|s| *s == format!("x[{n}][0]")).unwrap();
    let s: Vec<f64> = r.q.iter().map(|q| q[last]).collect();
    let crossings: Vec<f64> = (1..s.len())
        .filter(|&k| s[k - 1].signum() != s[k].signum())
        .map(|k| h * ((k - 1) as f64 + s[k - 1] / (s[k - 1] - s[k])))
        .collect();
    assert!(crossings.len() >= 4, "N = {n}: {} zero crossings", crossings.len());
    let half_periods = (crossings.len() - 1) as f64;
    std::f64::consts::PI * half_periods / (crossings[crossings.len() - 1] - crossings[0])
}

#[test]
fn hanging_chains_of_32_and_64_links_oscillate_at_their_normal_frequencies() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain_cartesian.hamel");
    for n in [32usize, 64] {
        let model = read_model(path.as_ref(), &[("N".into(), n as i64)]).unwrap();
        let sys = compile(&model, "rattle".parse().unwrap(), Backend::Jit).unwrap();
        let modes = normal_modes(n);
        // The continuum limit, as a sanity check of the hand-derived matrices:
        // j_{0,1} = 2.404825557695773.
        let continuum = 2.404825557695773 / 2.0 * (G / (n as f64 * L)).sqrt();
        let ratio = modes[0].0 / continuum;
        println!("N = {n}: ω₁ / continuum limit = {ratio:.5}");
        assert!(
            (ratio - 1.0).abs() < 0.5 / n as f64,
            "N = {n}: ω₁ / continuum = {ratio}"
        );
        for (k, (omega, shape)) in modes.iter().take(3).enumerate() {
            // Amplitude 1e-4 rad at the largest link angle: the nonlinear
            // frequency shift is O(1e-8), RATTLE's phase error (ωh)²/24 ≈ 1e-5.
            let top = shape.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let theta: Vec<f64> = shape.iter().map(|x| 1e-4 * x / top).collect();
            let got = measured_frequency(&sys, &theta, *omega, 3.0);
            let err = got / omega - 1.0;
            // What is left is RATTLE's own phase error, (ωh)²/24 + O(h⁴) for
            // h = 1/400 of the period (Störmer–Verlet on a harmonic
            // oscillator: cos ω̃h = 1 − (ωh)²/2).
            let phase = (2.0 * std::f64::consts::PI / 400.0).powi(2) / 24.0;
            println!(
                "N = {n}, mode {}: ω = {omega:.9}, measured {got:.9}, relative error {err:.2e} (phase error {phase:.2e})",
                k + 1
            );
            assert!(
                (err - phase).abs() < 0.05 * phase,
                "N = {n}, mode {}: ω = {omega}, measured {got} ({err:e}, phase error {phase:e})",
                k + 1
            );
        }
    }
}
