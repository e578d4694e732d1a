//! Every instruction-set copy of the derived double-pendulum kernels, run on
//! this machine: the baseline, AVX2 and AVX-512 copies of the averaged Hamel
//! step (the last with the default feature `avx512`), each pinned by
//! `hamel::runtime::isa`, give the same trajectory to the bit, and the same as
//! the JIT. Copies the processor lacks are reported and skipped (a ceiling
//! never runs them).
//!
//! One test function: the ceiling is process-wide, so the copies run in turn.

#[macro_use]
mod common;

use std::path::Path;

use hamel::runtime::isa::{self, Isa};
use hamel::{DynStepper, State, Stepper};
use hamel_compiler::emit::rust::{self, Role, Shape};
use hamel_compiler::scheme::Scheme;

double_pendulum!(
    with_copies Dsp,
    model = "models/double_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "averaged"
);

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/double_spherical_pendulum.hamel");
const H: f64 = 0.01;
const STEPS: usize = 300;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The states after each of `STEPS` steps from Pattern I, under the current ceiling.
fn trajectory(model: &Dsp) -> Vec<Vec<u64>> {
    let mut state: State<12, _> = model.initial("pattern_I").unwrap();
    let mut stepper = Stepper::new(model, H).unwrap();
    (0..STEPS)
        .map(|_| {
            stepper.step(&mut state).unwrap();
            bits(state.z.as_slice())
        })
        .collect()
}

#[test]
fn every_instruction_set_copy_agrees_to_the_bit_with_the_others_and_the_jit() {
    // The test means something only while the step's kernels get copies.
    let src = std::fs::read_to_string(MODEL).unwrap();
    let sys = Scheme::from_names("hamel", Some("averaged"))
        .unwrap()
        .derive(&hamel_compiler::load("double_spherical_pendulum.hamel", &src).unwrap())
        .unwrap();
    let mut g = sys.graph.clone();
    let copied: Vec<String> = sys
        .functions()
        .iter()
        .filter(|f| f.name.is_hot())
        .filter(|f| {
            let (_, st) = rust::function(&mut g, f, Role::Step, &|_| None).unwrap();
            rust::shape(st.ops, Role::Step) == Shape::Copies
        })
        .map(|f| f.name.symbol())
        .collect();
    assert!(
        !copied.is_empty(),
        "no kernel of the double pendulum has instruction-set copies"
    );
    println!("kernels with copies: {copied:?}");

    let model = Dsp::with_defaults();
    // Without the feature the derive emits no AVX-512 copy: its ceiling would run AVX2 again.
    let emitted = if cfg!(feature = "avx512") {
        &Isa::ALL[..]
    } else {
        &Isa::ALL[..2]
    };
    let mut runs = Vec::new();
    for &level in emitted {
        let ran = isa::set_ceiling(level);
        if ran != level {
            println!(
                "{}: not available on this processor (runs {}); skipped",
                level.name(),
                ran.name()
            );
            continue;
        }
        let run = trajectory(&model);
        // The dispatch followed the ceiling (debug assertions are on in tests).
        if cfg!(debug_assertions) {
            assert_eq!(isa::last_run(), Some(level), "pinned {}", level.name());
        }
        runs.push((level, run));
    }
    isa::set_ceiling(Isa::Avx512);
    assert!(runs.iter().any(|(l, _)| *l == Isa::Baseline));
    println!("ran: {:?}", runs.iter().map(|(l, _)| l.name()).collect::<Vec<_>>());

    let jit_model = hamel_load::read_model(Path::new(MODEL), &[]).unwrap();
    let jit = hamel_load::compile(&jit_model, "hamel_averaged".parse().unwrap(), hamel_load::Backend::Jit).unwrap();
    let mut state = jit.initial("pattern_I").unwrap();
    let mut stepper = DynStepper::new(&jit, H).unwrap();
    let jit_run: Vec<Vec<u64>> = (0..STEPS)
        .map(|_| {
            stepper.step(&mut state).unwrap();
            bits(state.z.as_slice())
        })
        .collect();

    for (level, run) in &runs {
        for (k, (a, b)) in run.iter().zip(&jit_run).enumerate() {
            assert_eq!(a, b, "{}: step {k} differs from the JIT", level.name());
        }
    }
    // The trajectory moves: equal runs are not equal by standing still.
    assert_ne!(jit_run[0], jit_run[STEPS - 1]);
}
