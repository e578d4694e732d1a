//! A model using every elementary function runs identically, to the bit, in
//! the JIT and in the interpreter (both call Rust's `f64` methods).

use hamel_load::{compile, load_source, run, Backend, RunOptions};

const MODEL: &str = "model f {
    parameters { k = 1.5 }
    coordinates { q, p }
    lagrangian = 0.5 * cosh(0.1 * q) * q'^2 + 0.5 * p'^2 - k * (1 - cos(q)) - tanh(p) * sinh(0.2 * p)
        + 0.1 * atan(q) * p' + 0.01 * asin(0.5 * sin(q)) + 0.01 * acos(0.3 * cos(p)) + exp(-p^2) + ln(2 + tan(0.1 * q)) * 0 + pi * 0 + 0.05 * atan2(p, 1 + q^2) * q'
    initial s { q = 0.4, p = -0.3, q' = 0.2, p' = 0.1 }
}";

#[test]
fn every_function_agrees_between_jit_and_interpreter() {
    let model = load_source("f.hamel", MODEL, &[]).unwrap_or_else(|e| panic!("{e}"));
    let opt = RunOptions {
        h: 0.05,
        steps: 400,
        compensated: false,
        record_every: 1,
        inputs: None,
        newton: Default::default(),
    };
    let runs: Vec<_> = [Backend::Jit, Backend::Interpreter]
        .into_iter()
        .map(|b| {
            let sys = compile(&model, "hamel_midpoint".parse().unwrap(), b).unwrap();
            let state = sys.initial("s").unwrap();
            run(&sys, state, None, &opt).unwrap()
        })
        .collect();
    assert_eq!(runs[0].q, runs[1].q);
    assert_eq!(runs[0].v, runs[1].v);
    // A variational integrator of a Lagrangian system: bounded energy error.
    let e = runs[0].monitor.reports()[0].max_rel_error;
    assert!(e < 1e-3, "{e}");
}
