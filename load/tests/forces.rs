//! Forces and inputs (docs/schemes.md §8) as testable identities: the discrete
//! energy balance where the scheme makes it exact and its O(h²) defect
//! elsewhere, the forced momentum balance, the input sensitivity against
//! central differences, zero input = the free step, and a tangent-space LQR
//! that stabilizes the inverted pendulum.

use hamel_load::{compile, compile_with_sensitivity, read_model, run, Backend, RunOptions, System};
use hamel_runtime::control::{dlqr, tangent_basis};
use hamel_runtime::nalgebra::{DMatrix, DVector};
use hamel_runtime::{DynStepper, Kernels};

fn model(name: &str) -> hamel_load::Model {
    let path = format!("{}/../models/{name}.hamel", env!("CARGO_MANIFEST_DIR"));
    read_model(path.as_ref(), &[]).unwrap()
}

fn system(name: &str, scheme: &str) -> System {
    compile(&model(name), scheme.parse().unwrap(), Backend::Jit).unwrap()
}

fn energy(sys: &System, st: &hamel_runtime::DynState) -> f64 {
    let (q, v) = sys.physical(&st.z, st.step).unwrap();
    sys.invariants_at(0.0, &q, &v)[0]
}

/// `max_k |E_k − E_0 − Σ W| / |E_0|` over `steps` steps of size `h`.
fn balance_defect(sys: &System, h: f64, steps: usize) -> f64 {
    let mut st = sys.initial("published").unwrap();
    let mut stepper = DynStepper::new(sys, h).unwrap();
    let e0 = energy(sys, &st);
    let mut worst = 0.0f64;
    for _ in 0..steps {
        stepper.step(&mut st).unwrap();
        worst = worst.max((energy(sys, &st) - e0 - stepper.work_done).abs());
    }
    worst / e0.abs()
}

#[test]
fn damped_energy_falls_by_the_discrete_work() {
    // Exact identities: Hamel (both kinematics) on the body-frame pendulum, energy–momentum.
    for (name, scheme) in [
        ("damped_spherical_pendulum", "hamel_averaged"),
        ("damped_spherical_pendulum", "hamel_midpoint"),
        ("damped_spherical_pendulum_cartesian", "energy_momentum"),
    ] {
        let sys = system(name, scheme);
        let d = balance_defect(&sys, 0.05, 1000);
        assert!(d < 1e-13, "{name} {scheme}: energy balance defect {d:e}");
        // The energy does fall: the friction is there.
        let mut st = sys.initial("published").unwrap();
        let e0 = energy(&sys, &st);
        let mut s = DynStepper::new(&sys, 0.05).unwrap();
        for _ in 0..1000 {
            s.step(&mut st).unwrap();
        }
        assert!(
            energy(&sys, &st) < e0 - 5.0,
            "{scheme}: energy {e0} → {}",
            energy(&sys, &st)
        );
    }
    // RATTLE and Störmer–Verlet: the defect is the scheme's O(h²) energy error.
    for scheme in ["rattle", "stormer_verlet"] {
        let sys = system("damped_spherical_pendulum_cartesian", scheme);
        let coarse = balance_defect(&sys, 0.05, 400);
        let fine = balance_defect(&sys, 0.025, 800);
        let ratio = coarse / fine;
        assert!(
            (3.5..4.5).contains(&ratio),
            "{scheme}: defect {coarse:e} → {fine:e}, ratio {ratio}"
        );
    }
}

#[test]
fn a_runs_summary_judges_the_energy_balance_of_a_forced_model() {
    let sys = system("damped_spherical_pendulum", "hamel_averaged");
    let opt = RunOptions {
        h: 0.05,
        steps: 2000,
        compensated: false,
        record_every: 100,
        inputs: None,
        newton: Default::default(),
    };
    let st = sys.initial("published").unwrap();
    let r = run(&sys, st, Some("published".into()), &opt).unwrap();
    let get = |n: &str| r.monitor.reports().iter().find(|x| x.name == n).unwrap().clone();
    // The energy falls by 21 %; the balance holds to round-off; the run is healthy.
    assert!(get("energy").max_rel_error > 0.2);
    assert!(get("energy balance").max_rel_error < 1e-13);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
}

#[test]
fn a_vertical_torque_changes_the_momentum_by_its_impulse() {
    let sys = system("torque_driven_spherical_pendulum", "hamel_midpoint");
    let (h, tau) = (0.05, 2.0);
    let mut st = sys.initial("published").unwrap();
    let mut s = DynStepper::new(&sys, h).unwrap();
    s.set_inputs(&[tau]).unwrap();
    let j = |st: &hamel_runtime::DynState| {
        let (q, v) = sys.physical(&st.z, st.step).unwrap();
        sys.invariants_at(0.0, &q, &v)[2]
    };
    let j0 = j(&st);
    let mut worst = 0.0f64;
    for k in 1..=1000 {
        s.step(&mut st).unwrap();
        worst = worst.max((j(&st) - j0 - k as f64 * h * tau).abs());
    }
    assert!(j(&st) > j0 + 99.0);
    assert!(worst < 1e-12 * j(&st).abs(), "J balance defect {worst:e}");
    // Wrong input counts and non-finite inputs are errors.
    assert!(s
        .set_inputs(&[1.0, 2.0])
        .unwrap_err()
        .to_string()
        .contains("takes 1 input"));
    assert!(s.set_inputs(&[f64::NAN]).unwrap_err().to_string().contains("`tau`"));
}

#[test]
fn input_sensitivity_matches_central_differences() {
    for scheme in ["hamel_midpoint", "hamel_averaged"] {
        let sys = compile_with_sensitivity(
            &model("inverted_spherical_pendulum"),
            scheme.parse().unwrap(),
            Backend::Jit,
        )
        .unwrap();
        let (h, u0) = (0.05, [0.3, -0.2]);
        let base = sys.initial("tilted").unwrap();
        let mut after = base.clone();
        let mut s = DynStepper::new(&sys, h).unwrap();
        s.set_inputs(&u0).unwrap();
        let (_, b) = s.step_linearized(&mut after, true).unwrap();
        assert_eq!(b.shape(), (base.z.len(), 2));
        let d = 1e-6;
        for j in 0..2 {
            let step_at = |du: f64| {
                let mut u = u0;
                u[j] += du;
                let mut st = base.clone();
                let mut s = DynStepper::new(&sys, h).unwrap();
                s.set_inputs(&u).unwrap();
                s.step(&mut st).unwrap();
                st.z
            };
            let fd = (step_at(d) - step_at(-d)) / (2.0 * d);
            let err = (&fd - b.column(j)).amax() / b.amax();
            assert!(err < 1e-6, "{scheme}: ∂z'/∂u[{j}] off by {err:e}");
            assert!(b.column(j).amax() > 1e-4, "the input moves the state");
        }
    }
}

#[test]
fn zero_input_steps_exactly_like_the_free_model() {
    for scheme in ["hamel_midpoint", "hamel_averaged"] {
        let free = system("spherical_pendulum", scheme);
        let forced = system("inverted_spherical_pendulum", scheme);
        let (q, _) = forced.initial_conditions("tilted").unwrap();
        let v = [0.3, -0.2, 0.0];
        let mut a = free.initial_state(&q, &v).unwrap();
        let mut b = forced.initial_state(&q, &v).unwrap();
        let (mut sa, mut sb) = (
            DynStepper::new(&free, 0.05).unwrap(),
            DynStepper::new(&forced, 0.05).unwrap(),
        );
        // Chord iterations weigh the kernels' operation counts, which the
        // force terms change: to the bit, compare with Newton's own choices.
        let (mut a_chord, mut b_chord) = (a.clone(), b.clone());
        let (mut ca, mut cb) = (
            DynStepper::new(&free, 0.05).unwrap(),
            DynStepper::new(&forced, 0.05).unwrap(),
        );
        sa.options.chord = false;
        sb.options.chord = false;
        for k in 0..500 {
            sa.step(&mut a).unwrap();
            sb.step(&mut b).unwrap();
            assert!(a.z == b.z, "{scheme}: step {k} differs");
            ca.step(&mut a_chord).unwrap();
            cb.step(&mut b_chord).unwrap();
            let gap = (&a_chord.z - &b_chord.z).amax() / a_chord.z.amax();
            // Round-off: about an ulp per step at most (6e-14 measured).
            assert!(
                gap <= 500.0 * f64::EPSILON,
                "{scheme}: step {k} differs by {gap:e} (relative) with chord iterations"
            );
        }
    }
}

#[test]
fn tangent_space_lqr_returns_the_inverted_pendulum_upright() {
    let sys = compile_with_sensitivity(
        &model("inverted_spherical_pendulum"),
        "hamel_midpoint".parse().unwrap(),
        Backend::Jit,
    )
    .unwrap();
    let h = 0.05;
    let (m, r, g): (f64, f64, f64) = (1.0, 9.8, 9.8);
    let upright = sys.initial("upright").unwrap();
    let z_star = upright.z.clone();
    let mut lin = upright;
    let mut s = DynStepper::new(&sys, h).unwrap();
    let (a, b) = s.step_linearized(&mut lin, true).unwrap();
    assert_eq!(lin.z, z_star, "upright at rest is an equilibrium");
    let n = z_star.len();
    let mut rows = DMatrix::zeros(1, n);
    for i in 0..3 {
        rows[(0, i)] = 2.0 * z_star[i];
    }
    let t = tangent_basis(&rows);
    assert_eq!(t.ncols(), n - 1);
    let a_r = t.transpose() * &a * &t;
    let b_r = t.transpose() * &b;
    assert!((&a * &t - &t * &a_r).amax() < 1e-12, "the tangent space is invariant");
    // Open loop: (1 ± h/2)/(1 ∓ h/2), each double (√(g/r) = 1).
    let grow = (1.0 + h / 2.0) / (1.0 - h / 2.0);
    let mut eig: Vec<f64> = a_r.complex_eigenvalues().iter().map(|c| c.norm()).collect();
    eig.sort_by(f64::total_cmp);
    for (e, x) in eig.iter().zip([1.0 / grow, 1.0 / grow, grow, grow]) {
        assert!((e - x).abs() < 1e-9, "{eig:?}");
    }
    let w = 1.0 / (m * r * r).powi(2);
    let mut qd = vec![100.0, 100.0, 0.0];
    qd.extend(std::iter::repeat_n(w, n - 3));
    let q_r = t.transpose() * DMatrix::from_diagonal(&DVector::from_vec(qd)) * &t;
    let r_w = DMatrix::identity(2, 2) / (m * g * r).powi(2);
    let lqr = dlqr(&a_r, &b_r, &q_r, &r_w, 1e-13, 10_000).unwrap();
    assert!(lqr.spectral_radius < 0.9, "ρ = {}", lqr.spectral_radius);
    let k = &lqr.k * t.transpose();
    // The library call is this design, to the bit.
    let q = DMatrix::from_diagonal(&DVector::from_vec(
        [100.0, 100.0, 0.0]
            .into_iter()
            .chain(std::iter::repeat_n(w, n - 3))
            .collect(),
    ));
    let design = hamel_runtime::control::lqr_at_equilibrium(
        &mut DynStepper::new(&sys, h).unwrap(),
        &sys.initial("upright").unwrap(),
        &[0.0, 0.0],
        &rows,
        &q,
        &r_w,
        1e-13,
        10_000,
    )
    .unwrap();
    assert_eq!((design.a, design.b, design.t), (a.clone(), b.clone(), t.clone()));
    assert_eq!((&design.a_r, &design.b_r), (&a_r, &b_r));
    assert_eq!(design.residual, 0.0);
    assert_eq!((&design.lqr.k, &design.lqr.p), (&lqr.k, &lqr.p));
    assert_eq!(
        (design.lqr.iterations, design.lqr.spectral_radius),
        (lqr.iterations, lqr.spectral_radius)
    );
    assert_eq!(design.gain, k);
    let mut st = sys.initial("tilted").unwrap();
    let mut cl = DynStepper::new(&sys, h).unwrap();
    for _ in 0..250 {
        let u = -(&k * (&st.z - &z_star));
        cl.step_with_inputs(&mut st, u.as_slice()).unwrap();
    }
    let dev = (&st.z - &z_star).norm();
    assert!(dev < 1e-8, "deviation after 250 steps {dev:e}");
}
