//! Double spherical pendulum, Hamel director form (theory §2.5), Pattern I of
//! W95 (theory §7.1). Exercises multipliers, non-vanishing bracket terms and
//! generated functions split into bounded parts.

#[macro_use]
mod common;

use hamel::{simulate, State};

double_pendulum!(
    DspAveraged,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);

double_pendulum!(
    DspMidpoint,
    model = "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Directors and angular velocities from W95's horizontal data (x₁ y₁ x₂ y₂ ẋ₁ ẏ₁ ẋ₂ ẏ₂),
/// z and ż from the constraints (masses below the pivot).
pub fn from_horizontal(l1: f64, l2: f64, d: [f64; 8]) -> ([f64; 6], [f64; 6]) {
    let [x1, y1, x2, y2, vx1, vy1, vx2, vy2] = d;
    let z1 = -(l1 * l1 - x1 * x1 - y1 * y1).sqrt();
    let vz1 = -(x1 * vx1 + y1 * vy1) / z1;
    let (dx, dy) = (x2 - x1, y2 - y1);
    let dz = -(l2 * l2 - dx * dx - dy * dy).sqrt();
    let (dvx, dvy) = (vx2 - vx1, vy2 - vy1);
    let dvz = -(dx * dvx + dy * dvy) / dz;
    let e1 = [x1 / l1, y1 / l1, z1 / l1];
    let e2 = [dx / l2, dy / l2, dz / l2];
    let w1 = cross(e1, [vx1 / l1, vy1 / l1, vz1 / l1]);
    let w2 = cross(e2, [dvx / l2, dvy / l2, dvz / l2]);
    (
        [e1[0], e1[1], e1[2], e2[0], e2[1], e2[2]],
        [w1[0], w1[1], w1[2], w2[0], w2[1], w2[2]],
    )
}

const PATTERN_I: [f64; 8] = [2.820, 0.025, 5.085, 0.105, 3.381, 2.506, 2.497, 10.495];

struct Errors {
    energy: f64,
    momentum: f64,
    lengths: f64,
    constraints: f64,
    max_nu: f64,
}

fn errors<M>(model: &M, state: State<12, 14>, h: f64, t_end: f64) -> Errors
where
    M: hamel::StepSystem<12, 14>,
{
    let mut s = state;
    let mut max_nu: f64 = 0.0;
    let run = simulate(model, &mut s, h, (t_end / h).round() as u64, |st| {
        if st.step > 0 {
            max_nu = max_nu.max(st.warm[12].abs()).max(st.warm[13].abs());
        }
    })
    .unwrap();
    let m = &run.monitor;
    Errors {
        energy: m.get("energy").unwrap().max_rel_error,
        momentum: m.get("J").unwrap().max_rel_error,
        lengths: ["length1", "length2"]
            .iter()
            .map(|n| m.get(n).unwrap().max_abs_error)
            .fold(0.0, f64::max),
        constraints: ["constraint 1", "constraint 2"]
            .iter()
            .map(|n| m.get(n).unwrap().max_abs_error)
            .fold(0.0, f64::max),
        max_nu,
    }
}

#[test]
fn pattern_one_averaged() {
    let m = DspAveraged::with_defaults();
    let (q, v) = from_horizontal(m.l1, m.l2, PATTERN_I);
    let coarse = errors(&m, m.initial_state(q, v).unwrap(), 0.02, 10.0);
    let fine = errors(&m, m.initial_state(q, v).unwrap(), 0.01, 10.0);
    println!(
        "averaged h=0.02/0.01: energy {:.2e}/{:.2e}, J {:.2e}/{:.2e}, |e|-1 {:.1e}, <w,e> {:.1e}, max|ν| {:.2e}/{:.2e}",
        coarse.energy,
        fine.energy,
        coarse.momentum,
        fine.momentum,
        fine.lengths,
        fine.constraints,
        coarse.max_nu,
        fine.max_nu
    );
    assert!(fine.lengths < 1e-13 && fine.constraints < 1e-12);
    let re = coarse.energy / fine.energy;
    assert!((3.0..=5.0).contains(&re), "energy ratio {re}");
    assert!(fine.energy < 2e-3 && fine.momentum < 1e-3);
}

#[test]
fn pattern_one_midpoint_multiplier_is_second_order() {
    let m = DspMidpoint::with_defaults();
    let (q, v) = from_horizontal(m.l1, m.l2, PATTERN_I);
    let coarse = errors(&m, m.initial_state(q, v).unwrap(), 0.02, 10.0);
    let fine = errors(&m, m.initial_state(q, v).unwrap(), 0.01, 10.0);
    println!(
        "midpoint h=0.02/0.01: energy {:.2e}/{:.2e}, J {:.2e}/{:.2e}, |e|-1 {:.1e}, <w,e> {:.1e}, max|ν| {:.2e}/{:.2e}",
        coarse.energy,
        fine.energy,
        coarse.momentum,
        fine.momentum,
        fine.lengths,
        fine.constraints,
        coarse.max_nu,
        fine.max_nu
    );
    assert!(fine.lengths < 1e-13 && fine.constraints < 1e-12);
    let rn = coarse.max_nu / fine.max_nu;
    assert!((3.0..=5.0).contains(&rn), "max|ν| ratio {rn} (O(h²): 4)");
    let re = coarse.energy / fine.energy;
    assert!((3.0..=5.0).contains(&re), "energy ratio {re}");
}
