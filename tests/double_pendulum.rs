//! Double spherical pendulum, Hamel director form (docs/schemes.md §2), Pattern I of
//! W95 (docs/schemes.md §8). Exercises multipliers, non-vanishing bracket terms and
//! generated functions split into bounded parts.

#[macro_use]
mod common;

use hamel::{simulate, State, StepSystem};

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

struct Errors {
    energy: f64,
    momentum: f64,
    lengths: f64,
    constraints: f64,
    max_nu: f64,
}

fn errors<M, const NX: usize>(model: &M, state: State<12, NX>, h: f64, t_end: f64) -> Errors
where
    M: hamel::StepSystem<12, NX>,
{
    let mut s = state;
    let mut max_nu: f64 = 0.0;
    let unknowns = model.names(hamel::NameList::Unknowns);
    let nu: Vec<usize> = (0..NX).filter(|&i| unknowns[i].starts_with("nu")).collect();
    assert_eq!(nu.len(), 2, "{unknowns:?}");
    let run = simulate(model, &mut s, h, (t_end / h).round() as u64, |st| {
        if st.step > 0 {
            max_nu = max_nu.max(st.warm[nu[0]].abs()).max(st.warm[nu[1]].abs());
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

/// Errors at h = 0.02 and 0.01 over 10 s from the model's `pattern_I`, with the
/// properties both kinematics share asserted.
fn coarse_and_fine<M: StepSystem<12, NX>, const NX: usize>(
    label: &str,
    start: State<12, NX>,
    m: &M,
) -> (Errors, Errors) {
    let coarse = errors(m, start, 0.02, 10.0);
    let fine = errors(m, start, 0.01, 10.0);
    println!(
        "{label} h=0.02/0.01: energy {:.2e}/{:.2e}, J {:.2e}/{:.2e}, |e|-1 {:.1e}, <w,e> {:.1e}, max|ν| {:.2e}/{:.2e}",
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
    (coarse, fine)
}

#[test]
fn pattern_one_averaged() {
    let m = DspAveraged::with_defaults();
    let (_, fine) = coarse_and_fine("averaged", m.initial("pattern_I").unwrap(), &m);
    assert!(fine.energy < 2e-3 && fine.momentum < 1e-3);
}

#[test]
fn pattern_one_midpoint_multiplier_is_second_order() {
    let m = DspMidpoint::with_defaults();
    let (coarse, fine) = coarse_and_fine("midpoint", m.initial("pattern_I").unwrap(), &m);
    let rn = coarse.max_nu / fine.max_nu;
    assert!((3.0..=5.0).contains(&rn), "max|ν| ratio {rn} (O(h²): 4)");
}
