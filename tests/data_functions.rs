//! A derived chain long enough that its functions called now and then (the
//! dense kinetic metric, the observation system, the momenta of the initial
//! state, the invariants) are emitted as data (`emit::rust::DATA_ABOVE`)
//! and evaluated by the interpreter: its initial state, physical state,
//! invariants and steps are the interpreter's, to the bit.
//! (`compiler/tests/emit_stats.rs` checks that these functions are data.)

use std::path::Path;

use hamel::{DynStepper, Integrator, Stepper};

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/spherical_chain.hamel",
    kinematics = "midpoint",
    sensitivity = false,
    N = 24
)]
pub struct Director24 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn compare() {
    let path = format!("{}/models/spherical_chain.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = hamel_load::read_model(Path::new(&path), &[("N".to_string(), 24)]).unwrap();
    let sys = hamel_load::compile(&m, "hamel_midpoint".parse().unwrap(), hamel_load::Backend::Interpreter).unwrap();
    let c = Director24::with_defaults();
    // The initial state: momenta (init_state) and the start's metric check.
    let mut s = c.initial("sway").unwrap();
    let mut r = sys.initial("sway").unwrap();
    assert_eq!(bits(s.z.as_slice()), bits(r.z.as_slice()));
    let mut st = Stepper::new(&c, 0.01).unwrap();
    let mut rt = DynStepper::new(&sys, 0.01).unwrap();
    for k in 0..20 {
        st.step(&mut s).unwrap();
        rt.step(&mut r).unwrap();
        assert_eq!(bits(s.z.as_slice()), bits(r.z.as_slice()), "step {k}");
    }
    // The physical state (observation system) and the invariants.
    let (q, v) = c.physical(&s).unwrap();
    let (rq, rv) = sys.physical(&r.z, r.step).unwrap();
    assert_eq!(bits(&q), bits(&rq));
    assert_eq!(bits(&v), bits(&rv));
    let inv = c.invariants(&s).unwrap();
    assert_eq!(bits(&inv), bits(&sys.invariants(&r.z, r.step).unwrap()));
    // And they are right, not only alike: unit directors, velocities
    // normal to them (the invariants' own residuals), finite energy.
    assert!(inv.iter().all(|x| x.is_finite()));
    for i in 0..24 {
        let e = &q[3 * i..3 * i + 3];
        let w = &v[3 * i..3 * i + 3];
        assert!((e.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(e.iter().zip(w).map(|(a, b)| a * b).sum::<f64>().abs() < 1e-12);
    }
}

#[test]
fn functions_emitted_as_data_give_the_interpreter_s_bits() {
    // The derived stepper of 240 unknowns holds its Jacobian inline
    // (`cost::MAX_FIXED_UNKNOWNS`): more than a test thread's stack.
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(compare)
        .unwrap()
        .join()
        .unwrap();
}
