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

/// The same JIT kernels stepped through the fixed-size driver and, with it
/// switched off, through the run-time-sized one: the same states and
/// Newton statistics, to the bit. (The test above compares back-ends too;
/// this one holds the kernels fixed, so that only the driver differs.)
#[test]
fn the_same_kernels_step_alike_on_either_driver() {
    for (model, scheme, initial, h) in [
        ("spherical_pendulum", "hamel_averaged", "published", 0.2),
        ("spherical_pendulum", "hamel_averaged", "over_equator", 0.1),
        ("double_spherical_pendulum", "hamel_averaged", "pattern_I", 0.01),
        (
            "double_spherical_pendulum_cartesian",
            "energy_momentum",
            "pattern_I",
            0.01,
        ),
        // the speed example's other schemes (RATTLE, Störmer–Verlet: 4 unknowns)
        ("double_spherical_pendulum", "hamel_midpoint", "pattern_I", 0.01),
        ("double_spherical_pendulum_cartesian", "rattle", "pattern_I", 0.01),
        (
            "double_spherical_pendulum_cartesian",
            "stormer_verlet",
            "pattern_I",
            0.01,
        ),
    ] {
        let jit = system(model, scheme, Backend::Jit);
        let mut fixed = DynStepper::new(&jit, h).unwrap();
        let mut general = DynStepper::new(&jit, h).unwrap().with_fixed_sizes(false);
        assert!(fixed.fixed_sizes(), "{model} {scheme}: on the fixed-size driver");
        assert!(!general.fixed_sizes(), "{model} {scheme}: switched off");
        let (mut a, mut b) = (jit.initial(initial).unwrap(), jit.initial(initial).unwrap());
        for _ in 0..1000 {
            fixed.step(&mut a).unwrap();
            general.step(&mut b).unwrap();
            assert_eq!(
                bits(a.z.as_slice()),
                bits(b.z.as_slice()),
                "{model} {scheme}: step {}",
                a.step
            );
            assert_eq!(bits(a.warm.as_slice()), bits(b.warm.as_slice()));
            assert_eq!(a.step, b.step);
        }
        assert_eq!(fixed.stats, general.stats, "{model} {scheme}");
        // Switched back on, the driver is used again.
        assert!(general.with_fixed_sizes(true).fixed_sizes());
    }
}

/// Which driver a stepper takes: the fixed-size one for the JIT's small
/// models, the run-time-sized one for sizes without a fixed-size driver
/// (a chain of four links), for the interpreter (no native kernels) and
/// under compensated summation.
#[test]
fn the_driver_follows_the_sizes_and_the_back_end() {
    let sphere = system("spherical_pendulum", "hamel_averaged", Backend::Jit);
    assert!(DynStepper::new(&sphere, 0.1).unwrap().fixed_sizes());
    assert!(!DynStepper::new(&sphere, 0.1)
        .unwrap()
        .with_compensation(true)
        .fixed_sizes());
    let interp = system("spherical_pendulum", "hamel_averaged", Backend::Interpreter);
    assert!(!DynStepper::new(&interp, 0.1).unwrap().fixed_sizes());
    let path = format!("{}/../models/spherical_chain.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = read_model(path.as_ref(), &[("N".to_string(), 4)]).unwrap();
    let chain = compile(&m, "hamel_averaged".parse().unwrap(), Backend::Jit).unwrap();
    let (z, x) = chain.dims();
    // Its 16 unknowns are more than a direct entry takes by value: no
    // native step, and no driver would take one.
    assert!(hamel_runtime::nalgebra::Dim::value(&x) > hamel_runtime::native::MAX_DIRECT_UNKNOWNS);
    assert!(chain.native().is_none(), "native kernels of sizes {z:?}, {x:?}");
    let mut stepper = DynStepper::new(&chain, 0.01).unwrap();
    assert!(!stepper.fixed_sizes(), "no fixed-size driver for sizes {z:?}, {x:?}");
    // and it steps
    let mut state = chain.initial("tilted").unwrap();
    stepper.step(&mut state).unwrap();
}
