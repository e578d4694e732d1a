//! The double spherical pendulum, Pattern I of Wendlandt (1995), 30 s at
//! h = 0.01, under every applicable scheme: Hamel in director form (both
//! kinematics), RATTLE, energy–momentum and index-reduced Störmer–Verlet in
//! Cartesian positions. One module for the example that prints and times it
//! (`examples/double_pendulum.rs`) and the test that checks the README's
//! quotes of it (`tests/readme_double_pendulum_table.rs`).
#![allow(dead_code)] // each includer uses what it needs

use hamel::{simulate, Integrator, State, StepSystem};

macro_rules! dsp {
    ($name:ident, $model:literal, $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel(model = $model, $($key = $val),*)]
        pub struct $name {
            pub m1: f64,
            pub m2: f64,
            pub l1: f64,
            pub l2: f64,
            pub g: f64,
        }
    };
}

dsp!(
    HamelAveraged,
    "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);
dsp!(
    HamelMidpoint,
    "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);
dsp!(
    Rattle,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
dsp!(
    EnergyMomentum,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
dsp!(
    StormerVerlet,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

pub const H: f64 = 0.01;
pub const STEPS: u64 = 3000;
const L1: f64 = 4.0;
const L2: f64 = 3.0;

fn norm(a: f64, b: f64, c: f64) -> f64 {
    (a * a + b * b + c * c).sqrt()
}

/// The relative link-length error of a state: of the bob positions in
/// Cartesian form, of the unit directors in director form.
fn link_error(z: &[f64], cartesian: bool) -> f64 {
    if cartesian {
        let a = (norm(z[0], z[1], z[2]) - L1).abs() / L1;
        let b = (norm(z[3] - z[0], z[4] - z[1], z[5] - z[2]) - L2).abs() / L2;
        a.max(b)
    } else {
        (norm(z[0], z[1], z[2]) - 1.0)
            .abs()
            .max((norm(z[3], z[4], z[5]) - 1.0).abs())
    }
}

/// What one scheme keeps over the run.
pub struct Accuracy {
    /// max |ΔE/E|
    pub energy: f64,
    /// max |ΔJ/J|
    pub momentum: f64,
    /// max relative link-length error
    pub constraint: f64,
    /// mean Newton iterations per step
    pub newton: f64,
}

/// Runs one scheme from `start`.
pub fn accuracy<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    cartesian: bool,
) -> Result<Accuracy, hamel::StepError> {
    let mut s = start;
    let mut constraint: f64 = 0.0;
    let run = simulate(sys, &mut s, H, STEPS, |st| {
        constraint = constraint.max(link_error(st.z.as_slice(), cartesian))
    })?;
    let m = &run.monitor;
    Ok(Accuracy {
        energy: m.get("energy").map_or(f64::NAN, |r| r.max_rel_error),
        momentum: m.get("J").map_or(f64::NAN, |r| r.max_rel_error),
        constraint,
        newton: run.newton.mean(),
    })
}
