//! Derived (compile-time) code vs the run-time back-end (register programs),
//! same model, scheme, state and Newton driver, 100 steps, side by side.
//!
//! `cargo bench -p hamel-cli --bench backends`

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use hamel::{Integrator, State, StepSystem, Stepper};
use hamel_cli::{compile, load_model, parse_scheme, TapeSystem};
use hamel_runtime::{DynState, DynStepper};

#[derive(Integrator)]
#[hamel(model = "../models/spherical_pendulum.hamel", scheme = "hamel", sensitivity = false)]
pub struct Pendulum {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(
    model = "../models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle",
    sensitivity = false
)]
pub struct DspRattle {
    pub m1: f64,
    pub m2: f64,
    pub l1: f64,
    pub l2: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(
    model = "../models/double_spherical_pendulum.hamel",
    scheme = "hamel",
    sensitivity = false
)]
pub struct DspHamel {
    pub m1: f64,
    pub m2: f64,
    pub l1: f64,
    pub l2: f64,
    pub g: f64,
}

const STEPS: usize = 100;

fn derived<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    h: f64,
    start: State<NZ, NX>,
) -> State<NZ, NX> {
    let mut s = start;
    let mut stepper = Stepper::new(sys, h).expect("valid h");
    for _ in 0..STEPS {
        stepper.step(&mut s).expect("step converges");
    }
    s
}

fn tape(sys: &TapeSystem, h: f64, start: &DynState) -> DynState {
    let mut s = start.clone();
    let mut stepper = DynStepper::new(sys, h).expect("valid h");
    for _ in 0..STEPS {
        stepper.step(&mut s).expect("step converges");
    }
    s
}

fn load(file: &str, scheme: &str) -> TapeSystem {
    let model = load_model(Path::new(file), &[]).expect("model loads");
    compile(&model, parse_scheme(scheme, None).expect("scheme")).expect("scheme applies")
}

fn bench(c: &mut Criterion) {
    let p = Pendulum::with_defaults();
    let ps = p.initial("published").unwrap();
    let pt = load("../models/spherical_pendulum.hamel", "hamel");
    let pts = pt.initial("published").unwrap();
    let mut g = c.benchmark_group("pendulum_hamel_100_steps");
    g.bench_function("derived", |b| b.iter(|| derived(&p, 0.2, std::hint::black_box(ps))));
    g.bench_function("tape", |b| b.iter(|| tape(&pt, 0.2, std::hint::black_box(&pts))));
    g.finish();

    let r = DspRattle::with_defaults();
    let rs = r.initial("pattern_I").unwrap();
    let rt = load("../models/double_spherical_pendulum_cartesian.hamel", "rattle");
    let rts = rt.initial("pattern_I").unwrap();
    let mut g = c.benchmark_group("dsp_rattle_100_steps");
    g.bench_function("derived", |b| b.iter(|| derived(&r, 0.01, std::hint::black_box(rs))));
    g.bench_function("tape", |b| b.iter(|| tape(&rt, 0.01, std::hint::black_box(&rts))));
    g.finish();

    let d = DspHamel::with_defaults();
    let ds = d.initial("pattern_I").unwrap();
    let dt = load("../models/double_spherical_pendulum.hamel", "hamel");
    let dts = dt.initial("pattern_I").unwrap();
    let mut g = c.benchmark_group("dsp_hamel_100_steps");
    g.sample_size(20);
    g.bench_function("derived", |b| b.iter(|| derived(&d, 0.01, std::hint::black_box(ds))));
    g.bench_function("tape", |b| b.iter(|| tape(&dt, 0.01, std::hint::black_box(&dts))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
