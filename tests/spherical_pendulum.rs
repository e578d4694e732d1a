//! The body-frame spherical pendulum (docs/schemes.md §2): the published run, the
//! equator crossing, second order, agreement of the two kinematics, and the
//! analytic Jacobian against finite differences.

#[macro_use]
mod common;

use hamel::{simulate, State, StepSystem};

pendulum!(
    Averaged,
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "averaged"
);

pendulum!(
    Midpoint,
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);

const BOUND: f64 = 1e-13;

/// Runs 10 000 steps at h = 0.2 and checks ‖γ‖, energy and J against `BOUND`;
/// returns (min, max) of the bob height seen.
fn published_bounds<S: StepSystem<5, NX>, const NX: usize>(sys: &S, mut state: State<5, NX>) -> (f64, f64) {
    let s = simulate(sys, &mut state, 0.2, 10_000, |_| {}).unwrap();
    let m = &s.monitor;
    let length = m.get("length").unwrap();
    let norm_err = (length.max - 1.0).abs().max((length.min - 1.0).abs());
    let e = m.get("energy").unwrap().max_rel_error;
    let j = m.get("J").unwrap().max_rel_error;
    println!(
        "{}: max|‖γ‖−1| = {norm_err:.2e}, energy rel {e:.2e}, J rel {j:.2e}",
        sys.scheme()
    );
    assert!(norm_err <= BOUND, "‖γ‖ drift {norm_err:e}");
    assert!(e <= BOUND, "energy error {e:e}");
    assert!(j <= BOUND, "momentum error {j:e}");
    assert_eq!(m.get("constraint 1").unwrap().max_abs_error, 0.0);
    let h = m.get("height").unwrap();
    (h.min, h.max)
}

#[test]
fn published_run_averaged() {
    let m = Averaged::with_defaults();
    published_bounds(&m, m.initial("published").unwrap());
}

#[test]
fn published_run_midpoint() {
    let m = Midpoint::with_defaults();
    published_bounds(&m, m.initial("published").unwrap());
}

#[test]
fn equator_crossing_keeps_the_bounds() {
    let m = Averaged::with_defaults();
    let (lo, hi) = published_bounds(&m, m.initial("over_equator").unwrap());
    assert!(
        lo < 0.0 && hi > 0.0,
        "the run must cross the equator: height in [{lo}, {hi}]"
    );
    let m = Midpoint::with_defaults();
    let (lo, hi) = published_bounds(&m, m.initial("over_equator").unwrap());
    assert!(lo < 0.0 && hi > 0.0);
}

#[test]
fn the_two_kinematics_are_the_same_map_here() {
    let (a, b) = (Averaged::with_defaults(), Midpoint::with_defaults());
    let (mut sa, mut sb) = (a.initial("published").unwrap(), b.initial("published").unwrap());
    simulate(&a, &mut sa, 0.2, 1000, |_| {}).unwrap();
    simulate(&b, &mut sb, 0.2, 1000, |_| {}).unwrap();
    let (qa, va) = a.physical(&sa).unwrap();
    let (qb, vb) = b.physical(&sb).unwrap();
    let dq = (0..3).map(|i| (qa[i] - qb[i]).abs()).fold(0.0, f64::max);
    let dv = (0..3).map(|i| (va[i] - vb[i]).abs()).fold(0.0, f64::max);
    println!("after 1000 steps: |Δγ| = {dq:.2e}, |Δξ| = {dv:.2e}");
    assert!(dq < 1e-11 && dv < 1e-11);
}

/// γ at time `t_end` with step `h`.
fn gamma_at<S: StepSystem<5, NX>, const NX: usize>(sys: &S, mut state: State<5, NX>, h: f64, t_end: f64) -> [f64; 3] {
    let n = (t_end / h).round() as u64;
    simulate(sys, &mut state, h, n, |_| {}).unwrap();
    [state.z[0], state.z[1], state.z[2]]
}

fn order_ratios<S: StepSystem<5, NX>, const NX: usize>(sys: &S, state: State<5, NX>) -> Vec<f64> {
    let t = 4.0;
    let reference = gamma_at(sys, state, 0.2 / 256.0, t);
    let errs: Vec<f64> = [0.2, 0.1, 0.05, 0.025]
        .iter()
        .map(|&h| {
            let g = gamma_at(sys, state, h, t);
            (0..3).map(|i| (g[i] - reference[i]).powi(2)).sum::<f64>().sqrt()
        })
        .collect();
    errs.windows(2).map(|w| w[0] / w[1]).collect()
}

#[test]
fn second_order_in_both_kinematics() {
    let a = Averaged::with_defaults();
    let b = Midpoint::with_defaults();
    let ra = order_ratios(&a, a.initial("published").unwrap());
    let rb = order_ratios(&b, b.initial("published").unwrap());
    println!("error ratios when h halves: averaged {ra:.3?}, midpoint {rb:.3?}");
    for r in ra.iter().chain(&rb) {
        assert!((3.5..=4.5).contains(r), "ratio {r}");
    }
}

/// Deterministic pseudo-random numbers in [-1, 1).
fn rand(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

fn jacobian_matches_fd<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(sys: &S) {
    let mut seed = 7u64;
    let mut worst: f64 = 0.0;
    for _ in 0..20 {
        let h = 0.05 + 0.2 * rand(&mut seed).abs();
        let z = hamel::nalgebra::SVector::<f64, NZ>::from_fn(|_, _| rand(&mut seed));
        let x = hamel::nalgebra::SVector::<f64, NX>::from_fn(|_, _| rand(&mut seed));
        let mut j = hamel::nalgebra::SMatrix::<f64, NX, NX>::zeros();
        sys.jacobian(h, &[], &z, &x, &mut j);
        let residual = |x: &hamel::nalgebra::SVector<f64, NX>| {
            let mut r = hamel::nalgebra::SVector::<f64, NX>::zeros();
            sys.residual(h, &[], &z, x, &mut r);
            r
        };
        for c in 0..NX {
            let d = 1e-6;
            let (mut xp, mut xm) = (x, x);
            xp[c] += d;
            xm[c] -= d;
            let fd = (residual(&xp) - residual(&xm)) / (2.0 * d);
            for r in 0..NX {
                let err = (j[(r, c)] - fd[r]).abs() / (1.0 + j[(r, c)].abs());
                worst = worst.max(err);
            }
        }
    }
    println!(
        "{}: worst relative Jacobian error vs central differences {worst:.2e}",
        sys.scheme()
    );
    assert!(worst < 1e-7);
}

#[test]
fn analytic_jacobian_matches_finite_differences() {
    jacobian_matches_fd(&Averaged::with_defaults());
    jacobian_matches_fd(&Midpoint::with_defaults());
    // Other parameter values too: the struct's fields are the parameters.
    jacobian_matches_fd(&Averaged { m: 2.5, r: 0.7, g: 3.0 });
}

#[test]
fn unknown_initial_state_is_a_clear_error() {
    let e = Averaged::with_defaults().initial("nope").unwrap_err().to_string();
    assert!(e.contains("no initial state `nope`") && e.contains("published"), "{e}");
    let e = Averaged::with_defaults()
        .initial_state([f64::NAN, 0.0, -1.0], [0.0; 3])
        .unwrap_err()
        .to_string();
    assert!(e.contains("gamma[0]"), "{e}");
}

#[test]
fn eliminated_velocity_components_must_satisfy_their_constraint() {
    // `xi[2] = 0` is eliminated symbolically: a non-zero value would be dropped
    // without a word if the round trip through the scheme state were not checked.
    let gamma = [0.3, 0.2, -(0.87f64).sqrt()];
    let e = Averaged::with_defaults()
        .initial_state(gamma, [0.6, 0.0, 0.5])
        .unwrap_err()
        .to_string();
    assert!(e.contains("off the constraints: `xi[2]` = 0.5"), "{e}");
    assert!(Averaged::with_defaults().initial_state(gamma, [0.6, 0.0, 0.0]).is_ok());
}

#[test]
fn bad_parameters_and_step_sizes_are_errors_and_leave_the_state_alone() {
    let good = Averaged::with_defaults();
    let start = good.initial("published").unwrap();
    let bad = Averaged {
        m: 1.0,
        r: f64::NAN,
        g: 9.8,
    };
    let e = bad.stepper(0.2).unwrap_err().to_string();
    assert!(e.contains("parameter `r`"), "{e}");
    assert!(bad.initial_state([0.0, 0.0, -1.0], [0.0; 3]).is_err());
    for h in [0.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(good.stepper(h), Err(hamel::StepError::BadStepSize(_))));
    }
    // A step that fails (here: a Newton iteration bound of 1) leaves the state as it was.
    let mut stepper = good.stepper(0.2).unwrap();
    stepper.options.max_iterations = 1;
    let mut s = start;
    let e = stepper.step(&mut s).unwrap_err();
    assert!(
        matches!(
            e,
            hamel::StepError::NotConverged {
                step: 0,
                iterations: 1,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(s, start);
    // and the caller can retry, e.g. with more iterations
    stepper.options.max_iterations = 30;
    stepper.step(&mut s).unwrap();
    assert_eq!(s.step, 1);
}
