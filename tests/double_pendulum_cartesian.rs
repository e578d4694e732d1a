//! Double spherical pendulum in Cartesian positions: energy–momentum and RATTLE
//! on W95's cases (docs/schemes.md §5, §7.1).

#[macro_use]
mod common;

use hamel::{simulate, State, StepSystem};

double_pendulum!(
    Em,
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);

double_pendulum!(
    Rattle,
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);

double_pendulum!(
    Hamel,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);

fn errors<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    h: f64,
    t: f64,
) -> (f64, f64, f64) {
    let mut s = start;
    let run = simulate(sys, &mut s, h, (t / h).round() as u64, |_| {}).unwrap();
    let m = &run.monitor;
    let cons = m
        .reports()
        .iter()
        // position level only: the hidden velocity-level constraints are imposed by RATTLE alone
        .filter(|r| r.name.starts_with("holonomic") && !r.name.ends_with("(velocity)"))
        .map(|r| r.max_abs_error)
        .fold(0.0, f64::max);
    (
        m.get("energy").unwrap().max_rel_error,
        m.get("J").unwrap().max_rel_error,
        cons,
    )
}

#[test]
fn energy_momentum_conserves_energy_and_momentum_on_pattern_one() {
    let m = Em::with_defaults();
    let (e, j, c) = errors(&m, m.initial("pattern_I").unwrap(), 0.01, 30.0);
    println!("energy_momentum, Pattern I, 30 s, h = 0.01: energy {e:.2e}, J {j:.2e}, constraints {c:.2e}");
    assert!(e <= 1e-12 && j <= 1e-12, "energy {e:e}, J {j:e}");
    assert!(c < 1e-12);
}

#[test]
fn rattle_keeps_constraints_and_momentum_on_pattern_one() {
    let m = Rattle::with_defaults();
    let (e, j, c) = errors(&m, m.initial("pattern_I").unwrap(), 0.01, 30.0);
    println!("rattle, Pattern I, 30 s, h = 0.01: energy {e:.2e}, J {j:.2e}, constraints {c:.2e}");
    assert!(j <= 1e-12 && c < 1e-12);
    assert!(e < 1e-2);
}

/// Bob positions at `t`: Cartesian state or directors.
fn positions_cartesian<S: StepSystem<12, NX>, const NX: usize>(
    sys: &S,
    start: State<12, NX>,
    h: f64,
    t: f64,
) -> [f64; 6] {
    let mut s = start;
    simulate(sys, &mut s, h, (t / h).round() as u64, |_| {}).unwrap();
    std::array::from_fn(|i| s.z[i])
}

#[test]
fn all_schemes_converge_at_second_order_to_one_reference() {
    let (em, ra, hm) = (Em::with_defaults(), Rattle::with_defaults(), Hamel::with_defaults());
    let t = 1.0;
    let reference = positions_cartesian(&em, em.initial("pattern_I").unwrap(), 0.01 / 64.0, t);
    let err = |p: [f64; 6]| (0..6).map(|i| (p[i] - reference[i]).abs()).fold(0.0, f64::max);
    let hamel_pos = |h: f64| {
        let mut s = hm.initial("pattern_I").unwrap();
        simulate(&hm, &mut s, h, (t / h).round() as u64, |_| {}).unwrap();
        let (e1, e2) = ([s.z[0], s.z[1], s.z[2]], [s.z[3], s.z[4], s.z[5]]);
        let x1 = e1.map(|c| 4.0 * c);
        std::array::from_fn(|i| if i < 3 { x1[i] } else { x1[i - 3] + 3.0 * e2[i - 3] })
    };
    let em_pos = |h| positions_cartesian(&em, em.initial("pattern_I").unwrap(), h, t);
    let ra_pos = |h| positions_cartesian(&ra, ra.initial("pattern_I").unwrap(), h, t);
    type Positions<'a> = &'a dyn Fn(f64) -> [f64; 6];
    let runs: [(&str, Positions); 3] = [
        ("energy_momentum", &em_pos),
        ("rattle", &ra_pos),
        ("hamel_averaged", &hamel_pos),
    ];
    for (name, f) in runs {
        let e: Vec<f64> = [0.02, 0.01, 0.005].iter().map(|&h| err(f(h))).collect();
        let r: Vec<f64> = e.windows(2).map(|w| w[0] / w[1]).collect();
        println!("{name}: position errors {e:?}, ratios {r:?}");
        for x in r {
            assert!((3.3..=4.7).contains(&x), "{name}: ratio {x}");
        }
    }
}

#[test]
fn relative_equilibrium_stays_put() {
    let m = Em::with_defaults();
    for (name, tol) in [
        ("relative_equilibrium", 1e-9),
        ("relative_equilibrium_printed", f64::INFINITY),
    ] {
        let mut s = m.initial(name).unwrap();
        let (mut r1, mut r2) = (Vec::new(), Vec::new());
        let mut phase = Vec::new();
        simulate(&m, &mut s, 0.01, 1000, |st| {
            r1.push((st.z[0] * st.z[0] + st.z[1] * st.z[1]).sqrt());
            r2.push(((st.z[3] - st.z[0]).powi(2) + (st.z[4] - st.z[1]).powi(2)).sqrt());
            phase.push(st.z[1].atan2(st.z[0]));
        })
        .unwrap();
        let wobble = |v: &[f64]| {
            v.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - v.iter().cloned().fold(f64::INFINITY, f64::min)
        };
        let mut turned = 0.0;
        for w in phase.windows(2) {
            let mut d = w[1] - w[0];
            if d > std::f64::consts::PI {
                d -= 2.0 * std::f64::consts::PI;
            }
            if d < -std::f64::consts::PI {
                d += 2.0 * std::f64::consts::PI;
            }
            turned += d;
        }
        let rate = turned / 10.0;
        println!(
            "energy_momentum, {name}: wobble r1 {:.2e}, r2 {:.2e}, mean rate {rate:.6} (Ω = 1.595506)",
            wobble(&r1),
            wobble(&r2)
        );
        assert!(wobble(&r1) < tol && wobble(&r2) < tol);
        if tol.is_finite() {
            assert!((rate - 1.595506).abs() < 1e-4);
        }
    }
}

double_pendulum!(
    Sv,
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

/// Wobble of r₁, r₂ and mean azimuthal rate of mass 1 over 10 s; `pos` gives the
/// two bob positions of a state.
fn relative_equilibrium_report<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    pos: impl Fn(&State<NZ, NX>) -> [f64; 6],
) -> (f64, f64, f64) {
    let mut s = start;
    let (mut r1, mut r2, mut turned, mut last) = (Vec::new(), Vec::new(), 0.0, None::<f64>);
    simulate(sys, &mut s, 0.01, 1000, |st| {
        let p = pos(st);
        r1.push(p[0].hypot(p[1]));
        r2.push((p[3] - p[0]).hypot(p[4] - p[1]));
        let a = p[1].atan2(p[0]);
        if let Some(l) = last {
            let mut d = a - l;
            d -= (d / std::f64::consts::TAU).round() * std::f64::consts::TAU;
            turned += d;
        }
        last = Some(a);
    })
    .unwrap();
    let wobble = |v: &[f64]| v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min);
    (wobble(&r1), wobble(&r2), turned / 10.0)
}

#[test]
fn relative_equilibrium_under_every_scheme() {
    fn cart<const NX: usize>(st: &State<12, NX>) -> [f64; 6] {
        std::array::from_fn(|i| st.z[i])
    }
    let (em, ra, sv, hm) = (
        Em::with_defaults(),
        Rattle::with_defaults(),
        Sv::with_defaults(),
        Hamel::with_defaults(),
    );
    let rows = [
        (
            "energy_momentum",
            relative_equilibrium_report(&em, em.initial("relative_equilibrium").unwrap(), cart),
        ),
        (
            "rattle",
            relative_equilibrium_report(&ra, ra.initial("relative_equilibrium").unwrap(), |st| {
                std::array::from_fn(|i| st.z[i])
            }),
        ),
        (
            "stormer_verlet",
            relative_equilibrium_report(&sv, sv.initial("relative_equilibrium").unwrap(), |st| {
                std::array::from_fn(|i| st.z[i])
            }),
        ),
        (
            "hamel_averaged",
            relative_equilibrium_report(&hm, hm.initial("relative_equilibrium").unwrap(), |st| {
                let x1 = [4.0 * st.z[0], 4.0 * st.z[1], 4.0 * st.z[2]];
                std::array::from_fn(|i| if i < 3 { x1[i] } else { x1[i - 3] + 3.0 * st.z[i] })
            }),
        ),
    ];
    for (name, (w1, w2, rate)) in rows {
        println!(
            "{name}: wobble r1 {w1:.2e}, r2 {w2:.2e}; mean rate {rate:.7} (Ω = 1.5955062, difference {:.1e})",
            rate - 1.5955061977691825
        );
        // The energy-momentum map keeps the continuous relative equilibrium to
        // round-off; the other maps oscillate about it by O(h²).
        let bound = if name == "energy_momentum" { 1e-12 } else { 1e-3 };
        assert!(w1 < bound && w2 < bound, "{name} leaves the relative equilibrium");
        assert!((rate - 1.5955061977691825).abs() < 1e-3, "{name}: rate {rate}");
    }
}

#[test]
fn published_pattern_three_is_rejected_not_run() {
    // W95 prints ẋ₁ = −0.001 for Pattern III, with link 1 horizontal: no ż₁ can
    // make that velocity tangent to the constraint (docs/schemes.md §8).
    let m = Rattle::with_defaults();
    let (mut q, mut v) = m.initial_conditions("pattern_III").unwrap();
    v[0] = -0.001;
    let e = m.initial_state(q, v).unwrap_err().to_string();
    println!("{e}");
    assert!(e.contains("holonomic 1 (velocity)") && e.contains("-8.000e-3"), "{e}");
    // and a position off the sphere is rejected too
    v[0] = 0.0;
    q[2] -= 0.01;
    let e = m.initial_state(q, v).unwrap_err().to_string();
    assert!(e.contains("`holonomic 1`"), "{e}");
}
