//! Generated discrete Hamel step vs a hand-written one of the same scheme,
//! driven by the same Newton solver, on the published spherical-pendulum run.
//!
//! `cargo bench --bench step`

use criterion::{criterion_group, criterion_main, Criterion};
use hamel::{Integrator, State, StepSystem, Stepper};

#[path = "hand_written.rs"]
mod hand_written;
use hand_written::HandWritten;

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
pub struct Generated {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

const STEPS: usize = 100;

fn run<S: StepSystem<5, NX>, const NX: usize>(sys: &S, start: State<5, NX>) -> State<5, NX> {
    let mut s = start;
    let mut stepper = Stepper::new(sys, 0.2).expect("valid h");
    for _ in 0..STEPS {
        stepper.step(&mut s).expect("step converges");
    }
    s
}

fn bench(c: &mut Criterion) {
    let generated = Generated::with_defaults();
    let start = generated.initial("published").expect("model has the published state");
    let hand = HandWritten { m: 1.0, r: 9.8, g: 9.8 };
    let hand_start = hamel::State::<5, 5> {
        z: start.z,
        lo: Default::default(),
        warm: Default::default(),
        step: 0,
        newton: Default::default(),
    };
    let mut group = c.benchmark_group("spherical_pendulum_100_steps");
    group.bench_function("generated", |b| b.iter(|| run(&generated, std::hint::black_box(start))));
    group.bench_function("hand_written", |b| {
        b.iter(|| run(&hand, std::hint::black_box(hand_start)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
