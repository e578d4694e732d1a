//! A crate that forbids unsafe code derives the double spherical pendulum,
//! whose step kernels carry instruction-set copies (called through `unsafe`
//! in the derive's own expansion, which rustc's `unsafe_code` lint does not
//! inspect), and with `simd = false` (no `unsafe` emitted at all). Both
//! compile under `#![forbid(unsafe_code)]` and step to the same bits.
//!
//! This file is the crate root of its test, so the `forbid` is the user's.

#![forbid(unsafe_code)]

#[macro_use]
mod common;

use hamel::{State, StepSystem, Stepper};

double_pendulum!(with_copies Dsp, model = "models/double_spherical_pendulum.hamel");
// `common`'s structs derive with `simd = false`.
double_pendulum!(DspBaseline, model = "models/double_spherical_pendulum.hamel");

fn run<M: StepSystem<12, NX>, const NX: usize>(model: &M, start: State<12, NX>) -> Vec<u64> {
    let mut state = start;
    let mut stepper = Stepper::new(model, 0.01).unwrap();
    for _ in 0..200 {
        stepper.step(&mut state).unwrap();
    }
    state.z.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn derives_compile_under_forbid_unsafe_code_and_agree() {
    let (simd, baseline) = (Dsp::with_defaults(), DspBaseline::with_defaults());
    let a = run(&simd, simd.initial("pattern_I").unwrap());
    let b = run(&baseline, baseline.initial("pattern_I").unwrap());
    assert_eq!(a, b);
}
