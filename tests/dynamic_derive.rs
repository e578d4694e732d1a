//! A derived step of more unknowns than `cost::MAX_FIXED_UNKNOWNS` is sized
//! at run time (`DynState`, and a `SharedStepper`: the runtime's stepper
//! through `dyn Kernels`, not compiled again in the deriving crate): the 37-link director chain (370
//! unknowns), whose fixed-size stepper would hold a 1.1 MB Jacobian inline,
//! steps on an ordinary test thread's stack and takes the interpreter's
//! steps to the bit, its Jacobian written as its pattern's values.

use std::path::Path;

use hamel::{DynState, DynStepper, Integrator, Kernels, SharedStepper};

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/spherical_chain.hamel",
    kinematics = "midpoint",
    sensitivity = false,
    N = 37
)]
pub struct Director37 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_director_chain_of_370_unknowns_is_sized_at_run_time_and_steps_as_the_interpreter() {
    let path = format!("{}/models/spherical_chain.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = hamel_load::read_model(Path::new(&path), &[("N".to_string(), 37)]).unwrap();
    let sys = hamel_load::compile(&m, "hamel_midpoint".parse().unwrap(), hamel_load::Backend::Interpreter).unwrap();
    let c = Director37::with_defaults();
    let nz = Director37::STATE.len();
    assert_eq!(Kernels::dims(&c), (hamel::nalgebra::Dyn(nz), hamel::nalgebra::Dyn(370)));
    assert!(Kernels::jacobian_band(&c).is_some() && Kernels::jacobian_pattern(&c).is_some());
    let mut s: DynState = c.initial("sway").unwrap();
    let mut r = sys.initial("sway").unwrap();
    assert_eq!(bits(s.z.as_slice()), bits(r.z.as_slice()));
    let mut st: SharedStepper<'_> = c.stepper(0.01).unwrap();
    let mut rt = DynStepper::new(&sys, 0.01).unwrap();
    for k in 0..10 {
        st.step(&mut s).unwrap();
        rt.step(&mut r).unwrap();
        assert_eq!(bits(s.z.as_slice()), bits(r.z.as_slice()), "step {k}");
    }
    let (q, v) = c.physical(&s).unwrap();
    let (rq, rv) = sys.physical(&r.z, r.step).unwrap();
    assert_eq!((bits(&q), bits(&v)), (bits(&rq), bits(&rv)));
    let inv = c.invariants(&s).unwrap();
    assert_eq!(bits(&inv), bits(&sys.invariants(&r.z, r.step).unwrap()));
    // The energy of a free chain stays where it started, to the tolerance
    // of a second-order step (an independent check: not a comparison of
    // two of our back-ends).
    let e0 = c.invariants(&c.initial("sway").unwrap()).unwrap()[0];
    assert!(((inv[0] - e0) / e0).abs() < 1e-4, "{} vs {e0}", inv[0]);
}
