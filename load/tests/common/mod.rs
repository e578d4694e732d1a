//! What the gallery tests share: a gallery model compiled under schemes and
//! back-ends, and a plain run of it.

use hamel_load::{compile, read_model, run, Backend, Run, RunOptions, Scheme, System};

/// Every (scheme, back-end) pair of `schemes` for `models/gallery/{name}.hamel`,
/// compiled and labelled `"{name} {scheme} {backend}"`.
pub fn systems(name: &str, schemes: &[&str]) -> Vec<(String, System)> {
    let path = format!("{}/../models/gallery/{name}.hamel", env!("CARGO_MANIFEST_DIR"));
    let m = read_model(path.as_ref(), &[]).unwrap();
    let mut out = vec![];
    for s in schemes {
        let scheme: Scheme = s.parse().unwrap();
        for b in Backend::ALL {
            let sys = compile(&m, scheme, b).unwrap_or_else(|e| panic!("{name} under {s}: {e}"));
            out.push((format!("{name} {s} {b}"), sys));
        }
    }
    out
}

/// The run of `steps` steps of size `h` from the named initial state,
/// recording the first and the last state.
pub fn simulate(sys: &System, init: &str, h: f64, steps: u64) -> Run {
    let opt = RunOptions {
        h,
        steps,
        compensated: false,
        record_every: steps,
        inputs: None,
        newton: Default::default(),
    };
    run(sys, sys.initial(init).unwrap(), None, &opt).unwrap()
}
