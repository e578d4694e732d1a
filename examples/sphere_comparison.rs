//! The published comparison (ZLB12 §5, docs/schemes.md §2–§4): the spherical pendulum
//! under the discrete Hamel integrator (body frame, averaged kinematics),
//! RATTLE and the index-reduced Störmer–Verlet method (Cartesian coordinates),
//! at the same step h = 0.2 for 10 000 steps from the same physical state.
//!
//! `cargo run --release --example sphere_comparison`: a table, then one JSON
//! object keyed by scheme as the last line.

use std::time::Instant;

use hamel::{State, StepSystem, Stepper};

#[path = "cases/sphere.rs"]
mod sphere;
use sphere::{accuracy, Hamel, Rattle, StormerVerlet, H, STEPS};

struct Row {
    name: &'static str,
    energy_abs: f64,
    energy_rel: f64,
    constraint: f64,
    momentum_rel: f64,
    ns_per_step: f64,
    newton: f64,
}

/// Runs and times one scheme; `length_scale` turns the `length` invariant into a relative error.
fn measure<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    name: &'static str,
    sys: &S,
    start: State<NZ, NX>,
    length_scale: f64,
) -> Result<Row, hamel::StepError> {
    let a = accuracy(sys, start, length_scale)?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut s = start;
        let mut stepper = Stepper::new(sys, H)?;
        let t0 = Instant::now();
        for _ in 0..STEPS {
            stepper.step(&mut s)?;
        }
        best = best.min(t0.elapsed().as_nanos() as f64 / STEPS as f64);
        std::hint::black_box(s);
    }
    Ok(Row {
        name,
        energy_abs: a.energy_abs,
        energy_rel: a.energy_rel,
        constraint: a.constraint,
        momentum_rel: a.momentum_rel,
        ns_per_step: best,
        newton: a.newton,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (hm, sv, ra) = (
        Hamel::with_defaults(),
        StormerVerlet::with_defaults(),
        Rattle::with_defaults(),
    );
    let rows = [
        measure("hamel_averaged", &hm, hm.initial("published")?, 1.0)?,
        measure("stormer_verlet", &sv, sv.initial("published")?, sv.r)?,
        measure("rattle", &ra, ra.initial("published")?, ra.r)?,
    ];
    println!("Spherical pendulum, published case: m = 1, r = 9.8, g = 9.8, h = {H}, {STEPS} steps");
    println!("constraint = max | ‖γ‖ − 1 | (Hamel, body frame) or max | ‖x‖ − r | / r (Cartesian)");
    println!();
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>12} {:>10} {:>8}",
        "scheme", "max |ΔE|", "max |ΔE/E|", "constraint", "max |ΔJ/J|", "ns/step", "Newton"
    );
    for r in &rows {
        println!(
            "{:<16} {:>12.2e} {:>12.2e} {:>12.2e} {:>12.2e} {:>10.0} {:>8.2}",
            r.name, r.energy_abs, r.energy_rel, r.constraint, r.momentum_rel, r.ns_per_step, r.newton
        );
    }
    let mut json = serde_json::Map::new();
    for r in &rows {
        json.insert(
            r.name.to_string(),
            serde_json::json!({
                "max_energy_error_abs": r.energy_abs,
                "max_energy_error_rel": r.energy_rel,
                "max_constraint_error": r.constraint,
                "max_momentum_error_rel": r.momentum_rel,
                "ns_per_step": r.ns_per_step,
                "newton_iterations_mean": r.newton,
            }),
        );
    }
    println!("{}", serde_json::Value::Object(json));
    Ok(())
}
