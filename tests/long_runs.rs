//! Long studies (not in CI): no secular drift over 10⁶ steps at h = 0.01 on the
//! double spherical pendulum, Pattern I.
//! `cargo test --release --test long_runs -- --ignored --nocapture`

#[macro_use]
mod common;

use hamel::{simulate, State, StepSystem};

double_pendulum!(
    Rattle,
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);

double_pendulum!(
    HamelAveraged,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);

double_pendulum!(
    HamelMidpoint,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);

/// Max relative energy and momentum errors in the first and last tenth of the run.
fn drift<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    steps: u64,
) -> [f64; 4] {
    let info = sys.invariant_info();
    let ie = info.iter().position(|(n, _)| *n == "energy").unwrap();
    let ij = info.iter().position(|(n, _)| *n == "J").unwrap();
    let mut v = vec![0.0; info.len()];
    sys.invariants_into(&start.z, &mut v).unwrap();
    let (e0, j0) = (v[ie], v[ij]);
    let mut out = [0.0f64; 4];
    let mut s = start;
    simulate(sys, &mut s, 0.01, steps, |st| {
        sys.invariants_into(&st.z, &mut v).unwrap();
        let (e, j) = (((v[ie] - e0) / e0).abs(), ((v[ij] - j0) / j0).abs());
        if st.step <= steps / 10 {
            out[0] = out[0].max(e);
            out[1] = out[1].max(j);
        } else if st.step >= steps - steps / 10 {
            out[2] = out[2].max(e);
            out[3] = out[3].max(j);
        }
    })
    .unwrap();
    out
}

#[test]
#[ignore = "long study"]
fn no_drift_over_a_million_steps() {
    let r = Rattle::with_defaults();
    let a = HamelAveraged::with_defaults();
    let m = HamelMidpoint::with_defaults();
    let steps = 1_000_000;
    for (name, d) in [
        ("rattle", drift(&r, r.initial("pattern_I").unwrap(), steps)),
        ("hamel_averaged", drift(&a, a.initial("pattern_I").unwrap(), steps)),
        ("hamel_midpoint", drift(&m, m.initial("pattern_I").unwrap(), steps)),
    ] {
        println!(
            "{name}: energy first/last 10% {:.3e} / {:.3e}; J {:.3e} / {:.3e}",
            d[0], d[2], d[1], d[3]
        );
        assert!(d[2] < 1.5 * d[0], "{name}: energy error grows");
    }
}
