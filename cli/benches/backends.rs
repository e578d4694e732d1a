//! Derived (compile-time) code vs the run-time back-ends (JIT and
//! interpreter of the same register programs), same model, scheme, state and
//! Newton driver, 100 steps, side by side.
//!
//! `cargo bench -p hamel-cli --bench backends`

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use hamel::{Integrator, State, StepSystem, Stepper};
use hamel_cli::{compile, load_model, parse_scheme, Backend, System};
use hamel_runtime::{DynState, DynStepper};

#[derive(Integrator)]
#[hamel(
    model = "../models/spherical_pendulum.hamel",
    scheme = "hamel_averaged",
    sensitivity = false
)]
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
    scheme = "hamel_averaged",
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

fn dynamic(sys: &System, h: f64, start: &DynState) -> DynState {
    let mut s = start.clone();
    let mut stepper = DynStepper::new(sys, h).expect("valid h");
    for _ in 0..STEPS {
        stepper.step(&mut s).expect("step converges");
    }
    s
}

fn load(file: &str, scheme: &str, backend: Backend) -> System {
    let model = load_model(Path::new(file), &[]).expect("model loads");
    compile(&model, parse_scheme(scheme, None).expect("scheme"), backend).expect("scheme applies")
}

/// Derived, JIT and interpreter steps of one case in one benchmark group.
fn group<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    c: &mut Criterion,
    name: &str,
    (sys, start): (&S, State<NZ, NX>),
    (file, scheme, init, h): (&str, &str, &str, f64),
) {
    let loaded = Backend::ALL.map(|b| load(file, scheme, b));
    let starts: Vec<DynState> = loaded.iter().map(|s| s.initial(init).expect("initial state")).collect();
    let mut g = c.benchmark_group(name);
    g.sample_size(20);
    g.bench_function("derived", |b| b.iter(|| derived(sys, h, std::hint::black_box(start))));
    for (l, s) in loaded.iter().zip(&starts) {
        g.bench_function(l.backend().name(), |b| {
            b.iter(|| dynamic(l, h, std::hint::black_box(s)))
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let p = Pendulum::with_defaults();
    let ps = p.initial("published").unwrap();
    group(
        c,
        "pendulum_hamel_100_steps",
        (&p, ps),
        ("../models/spherical_pendulum.hamel", "hamel_averaged", "published", 0.2),
    );
    let r = DspRattle::with_defaults();
    let rs = r.initial("pattern_I").unwrap();
    group(
        c,
        "dsp_rattle_100_steps",
        (&r, rs),
        (
            "../models/double_spherical_pendulum_cartesian.hamel",
            "rattle",
            "pattern_I",
            0.01,
        ),
    );
    let d = DspHamel::with_defaults();
    let ds = d.initial("pattern_I").unwrap();
    group(
        c,
        "dsp_hamel_100_steps",
        (&d, ds),
        (
            "../models/double_spherical_pendulum.hamel",
            "hamel_averaged",
            "pattern_I",
            0.01,
        ),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
