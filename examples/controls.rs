//! Forces, inputs and control (docs/schemes.md §8), measured on derived integrators.
//!
//! `cargo run --release --example controls` prints tables and, as its last
//! line, one JSON object:
//!
//! - `damped`: pivot friction `R = ½ c |ξ|²`; the discrete energy balance
//!   `E_k − E_0 = Σ_{j<k} W_j` (`W_j` the discrete work of the friction over
//!   step `j`), exact for the Hamel schemes on the body-frame pendulum and for
//!   energy–momentum, O(h²) for RATTLE and Störmer–Verlet;
//! - `torque`: a torque τ about the vertical; `J_k = J_0 + k h τ`;
//! - `sensitivity_u_fd_error`: `∂z'/∂u` against central differences;
//! - `lqr`: the inverted spherical pendulum stabilized from a 6.4° tilt by a
//!   discrete LQR designed in the tangent space of the constraints;
//! - `zero_input_identical`: a forced model at zero input and zero force steps
//!   exactly like the free model (f64 `==`).

use hamel::nalgebra::DMatrix;
use hamel::runtime::control::{dlqr, lqr_at_equilibrium};
use hamel::{simulate_controlled, Integrator, State, StepSystem, Stepper};

macro_rules! model {
    ($name:ident, [$($field:ident),*], $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel($($key = $val),*)]
        pub struct $name { $(pub $field: f64),* }
    };
}

model!(
    DampedAveraged,
    [m, r, g, c],
    model = "models/damped_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DampedMidpoint,
    [m, r, g, c],
    model = "models/damped_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DampedEm,
    [m, r, g, c],
    model = "models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    DampedRattle,
    [m, r, g, c],
    model = "models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    DampedSv,
    [m, r, g, c],
    model = "models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);
model!(
    Torque,
    [m, r, g],
    model = "models/torque_driven_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint",
    sensitivity = true
);
model!(
    Inverted,
    [m, r, g],
    model = "models/inverted_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint",
    sensitivity = true
);
model!(
    FreeMidpoint,
    [m, r, g],
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    FreeAveraged,
    [m, r, g],
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);

const H: f64 = 0.05;

type Boxed = Box<dyn std::error::Error>;

/// Energy first among the invariants.
fn energy<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(sys: &S, st: &State<NZ, NX>) -> f64 {
    let mut out = vec![0.0; sys.invariant_info().len()];
    sys.invariants_into(&st.z, &mut out).expect("invariants");
    out[0]
}

/// `max_k |E_k − E_0 − Σ_{j<k} W_j| / |E_0|` and the energy lost, over `steps`.
fn energy_balance<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    steps: u64,
) -> Result<(f64, f64, f64), Boxed> {
    let mut st = start;
    let mut stepper = Stepper::new(sys, H)?;
    let e0 = energy(sys, &st);
    let mut worst = 0.0f64;
    for _ in 0..steps {
        stepper.step(&mut st)?;
        let defect = energy(sys, &st) - e0 - stepper.work_done;
        worst = worst.max(defect.abs());
    }
    Ok((worst / e0.abs(), e0, energy(sys, &st)))
}

/// The inverted spherical pendulum under a discrete LQR designed in the
/// tangent space of the constraints: prints the design and the closed loop,
/// returns the summary's `lqr` object.
fn lqr(inv: &Inverted) -> Result<serde_json::Value, Boxed> {
    let (m, r, g) = (inv.m, inv.r, inv.g);
    let upright = inv.initial("upright")?;
    let z_star = upright.z;
    // The state (γ, π₁, π₂) satisfies ‖γ‖² = 1: its derivative at γ* = e3 is (0, 0, 2, 0, 0).
    let rows = DMatrix::from_row_slice(1, 5, &[2.0 * z_star[0], 2.0 * z_star[1], 2.0 * z_star[2], 0.0, 0.0]);
    let w = 1.0 / (m * r * r).powi(2);
    let q_full = DMatrix::from_diagonal(&hamel::nalgebra::DVector::from_vec(vec![100.0, 100.0, 0.0, w, w]));
    let r_w = DMatrix::<f64>::identity(2, 2) / (m * g * r).powi(2);
    let design = lqr_at_equilibrium(
        &mut inv.stepper(H)?,
        &upright,
        &[0.0, 0.0],
        &rows,
        &q_full,
        &r_w,
        1e-13,
        10_000,
    )?;
    let equilibrium_residual = design.residual;
    let (a, b, t, a_r) = (&design.a, &design.b, &design.t, &design.a_r);
    let invariance = (a * t - t * a_r).amax();
    let eig_full: Vec<f64> = a.complex_eigenvalues().iter().map(|c| c.norm()).collect();
    let mut eig_r: Vec<f64> = a_r.complex_eigenvalues().iter().map(|c| c.norm()).collect();
    eig_r.sort_by(f64::total_cmp);
    // The full-state design, to show that it has no stabilizing solution.
    let full = dlqr(a, b, &q_full, &r_w, 1e-13, 2000);
    let (lqr, k_full) = (&design.lqr, &design.gain);
    // Closed loop from the tilted state: u_k = −K Tᵀ (z_k − z*).
    let mut st = inv.initial("tilted")?;
    let (mut settled, mut peak) = (None, 0.0f64);
    let closed_steps = 400;
    let feedback = |s: &State<5, 3>, u: &mut [f64]| {
        let dz = hamel::nalgebra::DVector::from_column_slice((s.z - z_star).as_slice());
        let v = -(k_full * dz);
        u.copy_from_slice(v.as_slice());
        peak = peak.max(v.amax());
    };
    let watch = |s: &State<5, 3>| {
        if settled.is_none() && (s.z - z_star).norm() < 1e-8 {
            settled = Some(s.step);
        }
    };
    let closed = simulate_controlled(inv.stepper(H)?, &mut st, closed_steps, feedback, watch)?;
    let length_drift = closed.monitor.get("length").ok_or("no length")?.max_abs_error;
    let final_deviation = (st.z - z_star).norm();
    println!();
    println!("Inverted spherical pendulum, hamel_midpoint, h = {H}, body torques u = (u1, u2)");
    println!("  equilibrium: ‖Φ(z*, 0) − z*‖∞ = {equilibrium_residual:.1e}");
    println!("  |eig(A)| (5×5 state): {eig_full:.5?}");
    println!(
        "  |eig(A_r)| (4×4 tangent space): {eig_r:.5?}  (expected (1 + h/2)/(1 − h/2) = {:.5} and its inverse)",
        (1.0 + H / 2.0) / (1.0 - H / 2.0)
    );
    println!("  ‖A T − T A_r‖∞ = {invariance:.1e}");
    match &full {
        Ok(l) => println!("  full-state Riccati: settled, ρ = {:.6}", l.spectral_radius),
        Err(e) => println!("  full-state Riccati: {e}"),
    }
    println!(
        "  tangent-space Riccati: {} iterations, closed-loop ρ(A_r − B_r K) = {:.4}",
        lqr.iterations, lqr.spectral_radius
    );
    println!(
        "  from a 6.4° tilt: ‖z − z*‖ < 1e-8 after {} steps; after {closed_steps} steps {final_deviation:.1e}; peak |u| = {:.3} mgr; max | ‖γ‖ − ‖γ₀‖ | = {length_drift:.1e}",
        settled.map_or("—".to_string(), |s| s.to_string()),
        peak / (m * g * r)
    );
    Ok(serde_json::json!({
        "spectral_radius": lqr.spectral_radius,
        "final_deviation": final_deviation,
        "riccati_iterations": lqr.iterations,
        "steps_to_1e-8": settled,
        "peak_input_mgr": peak / (m * g * r),
        "full_state_spectral_radius": full.as_ref().map(|l| l.spectral_radius).ok(),
    }))
}

fn main() -> Result<(), Boxed> {
    // ---- damped pendulum: discrete energy balance ----
    println!("Damped spherical pendulum, R = ½ c |ξ|², c = 1, h = {H}, 2000 steps (Cartesian: f = −(c/r²) v)");
    println!(
        "{:<34} {:>12} {:>12} {:>22}",
        "scheme", "E_0", "E_2000", "max |E−E₀−ΣW| / |E₀|"
    );
    let steps = 2000;
    let mut rows = Vec::new();
    let da = DampedAveraged::with_defaults();
    rows.push((
        "hamel (averaged), body frame",
        true,
        energy_balance(&da, da.initial("published")?, steps)?,
    ));
    let dm = DampedMidpoint::with_defaults();
    rows.push((
        "hamel_midpoint, body frame",
        true,
        energy_balance(&dm, dm.initial("published")?, steps)?,
    ));
    let de = DampedEm::with_defaults();
    rows.push((
        "energy_momentum, Cartesian",
        true,
        energy_balance(&de, de.initial("published")?, steps)?,
    ));
    let dr = DampedRattle::with_defaults();
    rows.push((
        "rattle, Cartesian",
        false,
        energy_balance(&dr, dr.initial("published")?, steps)?,
    ));
    let ds = DampedSv::with_defaults();
    rows.push((
        "stormer_verlet, Cartesian",
        false,
        energy_balance(&ds, ds.initial("published")?, steps)?,
    ));
    let mut exact = 0.0f64;
    let mut per_scheme = serde_json::Map::new();
    for (name, is_exact, (err, e0, e1)) in &rows {
        println!("{name:<34} {e0:>12.6} {e1:>12.6} {err:>22.2e}");
        if *is_exact {
            exact = exact.max(*err);
        }
        per_scheme.insert(name.to_string(), serde_json::json!(err));
    }
    println!("(exact identity: the hamel schemes and energy_momentum; rattle and stormer_verlet: O(h²))");

    // ---- torque about the vertical: momentum balance ----
    let tau = 2.0;
    let tm = Torque::with_defaults();
    let mut st = tm.initial("published")?;
    let mut stepper = tm.stepper(H)?;
    stepper.set_inputs(&[tau])?;
    let j_of = |st: &State<5, 3>| -> Result<f64, Boxed> { Ok(tm.invariants(st)?[2]) };
    let j0 = j_of(&st)?;
    let (mut worst, mut largest) = (0.0f64, j0.abs());
    for k in 1..=steps {
        stepper.step(&mut st)?;
        let j = j_of(&st)?;
        worst = worst.max((j - j0 - k as f64 * H * tau).abs());
        largest = largest.max(j.abs());
    }
    let momentum_err = worst / largest;
    println!();
    println!(
        "Torque τ = {tau} about the vertical, hamel_midpoint: J {j0:.3} → {:.3}; max |J_k − J₀ − k h τ| = {worst:.2e} ({momentum_err:.2e} relative)",
        j_of(&st)?
    );

    // ---- input sensitivity against central differences ----
    let inv = Inverted::with_defaults();
    let mut base = inv.initial("tilted")?;
    let u0 = [0.3, -0.2];
    {
        let mut s = inv.stepper(H)?;
        s.set_inputs(&u0)?;
        for _ in 0..10 {
            s.step(&mut base)?;
        }
    }
    let mut s = inv.stepper(H)?;
    s.set_inputs(&u0)?;
    let mut after = base;
    let (_, b) = s.step_linearized(&mut after, true)?;
    let d = 1e-6;
    let mut fd_err = 0.0f64;
    for j in 0..2 {
        let step_at = |du: f64| -> Result<State<5, 3>, Boxed> {
            let mut u = u0;
            u[j] += du;
            let mut st = base;
            let mut s = inv.stepper(H)?;
            s.set_inputs(&u)?;
            s.step(&mut st)?;
            Ok(st)
        };
        let (p, m) = (step_at(d)?, step_at(-d)?);
        for i in 0..5 {
            let fd = (p.z[i] - m.z[i]) / (2.0 * d);
            fd_err = fd_err.max((fd - b[(i, j)]).abs() / b.amax().max(1.0));
        }
    }
    println!();
    println!("∂z'/∂u against central differences (δ = {d:e}): {fd_err:.2e} (relative to max |B|)");

    let lqr_summary = lqr(&inv)?;

    // ---- zero input and zero force = the free model ----
    let free = FreeMidpoint::with_defaults();
    let mut a_st = free.initial_state(inv.initial_conditions("tilted").ok_or("no tilted")?.0, [0.3, -0.2, 0.0])?;
    let mut b_st = inv.initial_state(inv.initial_conditions("tilted").ok_or("no tilted")?.0, [0.3, -0.2, 0.0])?;
    let (mut fa, mut fb) = (free.stepper(H)?, inv.stepper(H)?);
    fb.set_inputs(&[0.0, 0.0])?;
    let mut identical = a_st.z == b_st.z;
    for _ in 0..steps {
        fa.step(&mut a_st)?;
        fb.step(&mut b_st)?;
        identical &= a_st.z == b_st.z;
    }
    let free_avg = FreeAveraged::with_defaults();
    let no_friction = DampedAveraged { c: 0.0, ..da };
    let (mut c_st, mut d_st) = (free_avg.initial("published")?, no_friction.initial("published")?);
    let (mut fc, mut fd) = (free_avg.stepper(H)?, no_friction.stepper(H)?);
    identical &= c_st.z == d_st.z;
    for _ in 0..steps {
        fc.step(&mut c_st)?;
        fd.step(&mut d_st)?;
        identical &= c_st.z == d_st.z;
    }
    println!();
    println!("zero input (inverted, u = 0) and zero force (damped, c = 0) step like the free model: {identical}");

    let summary = serde_json::json!({
        "damped": {
            "energy_balance_error_rel": exact,
            "exact_schemes": ["hamel_averaged", "hamel_midpoint", "energy_momentum"],
            "per_scheme": per_scheme,
        },
        "torque": { "momentum_balance_error_rel": momentum_err },
        "sensitivity_u_fd_error": fd_err,
        "lqr": lqr_summary,
        "zero_input_identical": identical,
    });
    println!("{summary}");
    Ok(())
}
