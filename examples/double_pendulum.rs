//! Double spherical pendulum, Pattern I of Wendlandt (1995), 30 s at h = 0.01,
//! with every applicable scheme (docs/schemes.md §2, §4, §5, §7.1): the Hamel
//! integrator in director form (both kinematics), and RATTLE, the
//! energy–momentum scheme and index-reduced Störmer–Verlet in Cartesian form.
//!
//! `cargo run --release --example double_pendulum`: a table, then one JSON
//! object keyed by scheme as the last line.

use std::time::Instant;

use hamel::{State, StepSystem, Stepper};

#[path = "cases/double_pendulum.rs"]
mod double_pendulum;
use double_pendulum::{accuracy, EnergyMomentum, HamelAveraged, HamelMidpoint, Rattle, StormerVerlet, H, STEPS};

struct Row {
    name: &'static str,
    energy: f64,
    momentum: f64,
    constraint: f64,
    ns: f64,
    newton: f64,
}

fn measure<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    name: &'static str,
    sys: &S,
    start: State<NZ, NX>,
    cartesian: bool,
) -> Result<Row, hamel::StepError> {
    let a = accuracy(sys, start, cartesian)?;
    let mut ns = f64::INFINITY;
    for _ in 0..3 {
        let mut s = start;
        let mut stepper = Stepper::new(sys, H)?;
        let t0 = Instant::now();
        for _ in 0..STEPS {
            stepper.step(&mut s)?;
        }
        ns = ns.min(t0.elapsed().as_nanos() as f64 / STEPS as f64);
        std::hint::black_box(s);
    }
    Ok(Row {
        name,
        energy: a.energy,
        momentum: a.momentum,
        constraint: a.constraint,
        ns,
        newton: a.newton,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (ha, hm) = (HamelAveraged::with_defaults(), HamelMidpoint::with_defaults());
    let (ra, em, sv) = (
        Rattle::with_defaults(),
        EnergyMomentum::with_defaults(),
        StormerVerlet::with_defaults(),
    );
    let rows = [
        measure("hamel_averaged", &ha, ha.initial("pattern_I")?, false)?,
        measure("hamel_midpoint", &hm, hm.initial("pattern_I")?, false)?,
        measure("rattle", &ra, ra.initial("pattern_I")?, true)?,
        measure("energy_momentum", &em, em.initial("pattern_I")?, true)?,
        measure("stormer_verlet", &sv, sv.initial("pattern_I")?, true)?,
    ];
    println!("Double spherical pendulum, W95 Pattern I: m1 = 2, m2 = 3.5, l1 = 4, l2 = 3, g = 9.81; h = {H}, 30 s");
    println!(
        "constraint = max relative link-length error; hamel runs in director form, the others in Cartesian positions"
    );
    println!();
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>10} {:>8}",
        "scheme", "max |ΔE/E|", "max |ΔJ/J|", "constraint", "ns/step", "Newton"
    );
    for r in &rows {
        println!(
            "{:<16} {:>12.2e} {:>12.2e} {:>12.2e} {:>10.0} {:>8.2}",
            r.name, r.energy, r.momentum, r.constraint, r.ns, r.newton
        );
    }
    let mut json = serde_json::Map::new();
    for r in &rows {
        json.insert(
            r.name.to_string(),
            serde_json::json!({
                "max_energy_error_rel": r.energy,
                "max_momentum_error_rel": r.momentum,
                "max_constraint_error": r.constraint,
                "ns_per_step": r.ns,
                "newton_iterations_mean": r.newton,
            }),
        );
    }
    println!("{}", serde_json::Value::Object(json));
    Ok(())
}
