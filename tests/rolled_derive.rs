//! Derived chains whose kernels are emitted as loops (`ROLL_ABOVE`) take the
//! steps of the run-time interpreter, which runs the same programs
//! straight-line: to the bit. (`compiler/tests/emit_stats.rs` checks that
//! these kernels are loops.)

use std::path::Path;

use hamel::{DynStepper, Integrator, Stepper};

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/spherical_chain_cartesian.hamel",
    scheme = "rattle",
    sensitivity = false,
    N = 32
)]
pub struct Rattle32 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(
    simd = false,
    model = "models/spherical_chain.hamel",
    kinematics = "midpoint",
    sensitivity = false,
    N = 8
)]
pub struct Director8 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

/// The states of `steps` steps of `h` from the initial state `tilted` of
/// `model` with `N = n` through the interpreter.
fn interpreted(model: &str, scheme: &str, n: i64, h: f64, steps: usize) -> Vec<Vec<f64>> {
    let path = format!("{}/models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = hamel_load::read_model(Path::new(&path), &[("N".to_string(), n)]).unwrap();
    let sys = hamel_load::compile(&m, scheme.parse().unwrap(), hamel_load::Backend::Interpreter).unwrap();
    let mut s = sys.initial("tilted").unwrap();
    let mut stepper = DynStepper::new(&sys, h).unwrap();
    (0..steps)
        .map(|_| {
            stepper.step(&mut s).unwrap();
            s.z.as_slice().to_vec()
        })
        .collect()
}

#[test]
fn a_32_link_rattle_chain_emitted_as_loops_steps_as_the_interpreter() {
    let c = Rattle32::with_defaults();
    let mut s = c.initial("tilted").unwrap();
    let mut st = Stepper::new(&c, 0.01).unwrap();
    let reference = interpreted("spherical_chain_cartesian", "rattle", 32, 0.01, 40);
    for (k, z) in reference.iter().enumerate() {
        st.step(&mut s).unwrap();
        assert_eq!(s.z.as_slice(), &z[..], "step {k}");
    }
}

#[test]
fn an_8_link_director_chain_emitted_as_loops_steps_as_the_interpreter() {
    let c = Director8::with_defaults();
    let mut s = c.initial("tilted").unwrap();
    let mut st = Stepper::new(&c, 0.01).unwrap();
    let reference = interpreted("spherical_chain", "hamel_midpoint", 8, 0.01, 40);
    for (k, z) in reference.iter().enumerate() {
        st.step(&mut s).unwrap();
        assert_eq!(s.z.as_slice(), &z[..], "step {k}");
    }
}
