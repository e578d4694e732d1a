//! Small models through the JIT step on a Newton driver of fixed sizes
//! (`hamel_runtime::native`); the interpreter's steps take the run-time-sized
//! driver. The two take the same iterations and reach the same states, to
//! the bit, whatever the scheme.

use hamel_load::{compile, read_model, Backend, System};
use hamel_runtime::{DynStepper, Kernels};

fn system(model: &str, scheme: &str, backend: Backend) -> System {
    let path = format!("{}/../models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = read_model(path.as_ref(), &[]).unwrap();
    compile(&m, scheme.parse().unwrap(), backend).unwrap()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_fixed_size_driver_steps_as_the_run_time_sized_one() {
    for (model, scheme, initial, h) in [
        ("spherical_pendulum", "hamel_averaged", "published", 0.2),
        ("double_spherical_pendulum", "hamel_averaged", "pattern_I", 0.01),
        ("double_spherical_pendulum", "hamel_midpoint", "pattern_I", 0.01),
        ("double_spherical_pendulum_cartesian", "rattle", "pattern_I", 0.01),
        (
            "double_spherical_pendulum_cartesian",
            "energy_momentum",
            "pattern_I",
            0.01,
        ),
        (
            "double_spherical_pendulum_cartesian",
            "stormer_verlet",
            "pattern_I",
            0.01,
        ),
    ] {
        let jit = system(model, scheme, Backend::Jit);
        let interp = system(model, scheme, Backend::Interpreter);
        assert!(jit.native().is_some(), "{model} {scheme}: native kernels");
        assert!(interp.native().is_none());
        let (mut a, mut b) = (jit.initial(initial).unwrap(), interp.initial(initial).unwrap());
        let (mut sa, mut sb) = (DynStepper::new(&jit, h).unwrap(), DynStepper::new(&interp, h).unwrap());
        for _ in 0..500 {
            sa.step(&mut a).unwrap();
            sb.step(&mut b).unwrap();
            assert_eq!(
                bits(a.z.as_slice()),
                bits(b.z.as_slice()),
                "{model} {scheme}: step {}",
                a.step
            );
            assert_eq!(bits(a.warm.as_slice()), bits(b.warm.as_slice()));
        }
        // What Newton carries from step to step is not compared whole: its
        // contraction estimate, a ratio of update norms, may differ in the
        // last bits (nalgebra sums a 4-vector's squares pairwise at fixed
        // size, in order at run-time size); the steps it steers agree.
        assert_eq!(sa.stats, sb.stats, "{model} {scheme}");
    }
}

/// A step that fails leaves the state as it was, on the fixed-size driver
/// too, with the error of the run-time-sized one.
#[test]
fn a_failed_fixed_size_step_leaves_the_state() {
    let jit = system("spherical_pendulum", "hamel_averaged", Backend::Jit);
    let interp = system("spherical_pendulum", "hamel_averaged", Backend::Interpreter);
    let (mut a, mut b) = (jit.initial("published").unwrap(), interp.initial("published").unwrap());
    let (mut sa, mut sb) = (
        DynStepper::new(&jit, 0.2).unwrap(),
        DynStepper::new(&interp, 0.2).unwrap(),
    );
    for s in [&mut sa, &mut sb] {
        s.options.max_iterations = 1;
    }
    let before = a.clone();
    let (ea, eb) = (sa.step(&mut a).unwrap_err(), sb.step(&mut b).unwrap_err());
    assert_eq!(ea, eb);
    assert_eq!(a, before);
}
