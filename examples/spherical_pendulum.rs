//! The published spherical-pendulum run (Z16 §6.3, docs/schemes.md §2) with the
//! derived discrete Hamel integrator, averaged kinematics.
//!
//! `cargo run --release --example spherical_pendulum` prints a table and, as
//! its last line, one JSON object summarizing the run.

use std::time::Instant;

use hamel::{simulate, Integrator};

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
pub struct SphericalPendulum {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = SphericalPendulum::with_defaults();
    let (h, steps) = (0.2, 10_000u64);
    let start = model.initial("published")?;
    let e0 = model.invariants(&start)?;
    let (i_energy, i_len, i_j) = (0, 1, 2);
    println!("Spherical pendulum, discrete Hamel integrator (averaged kinematics)");
    println!(
        "m = {}, r = {}, g = {}, h = {h}, {steps} steps; published initial state",
        model.m, model.r, model.g
    );
    println!();
    println!(
        "{:>6} {:>8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "step", "t", "γ₁", "γ₂", "γ₃", "|‖γ‖−1|", "ΔE/E", "ΔJ/J"
    );
    let mut state = start;
    let mut rows = Vec::new();
    let run = simulate(&model, &mut state, h, steps, |s| {
        if s.step % 1000 == 0 {
            rows.push(*s);
        }
    })?;
    for s in &rows {
        let inv = model.invariants(s)?;
        println!(
            "{:>6} {:>8.1} {:>10.6} {:>10.6} {:>10.6} {:>12.2e} {:>12.2e} {:>12.2e}",
            s.step,
            s.step as f64 * h,
            s.z[0],
            s.z[1],
            s.z[2],
            (inv[i_len] - 1.0).abs(),
            ((inv[i_energy] - e0[i_energy]) / e0[i_energy]).abs(),
            ((inv[i_j] - e0[i_j]) / e0[i_j]).abs(),
        );
    }
    let m = &run.monitor;
    let len = m.get("length").ok_or("model has no `length` invariant")?;
    let max_norm_error = (len.max - 1.0).abs().max((len.min - 1.0).abs());
    let energy = m.get("energy").ok_or("no energy")?.max_rel_error;
    let momentum = m.get("J").ok_or("model has no `J` invariant")?.max_rel_error;

    // Timing: the same run again without monitoring, best of 5.
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut s = start;
        let mut stepper = model.stepper(h)?;
        let t0 = Instant::now();
        for _ in 0..steps {
            stepper.step(&mut s)?;
        }
        best = best.min(t0.elapsed().as_nanos() as f64 / steps as f64);
        std::hint::black_box(s);
    }
    println!();
    println!("max |‖γ‖ − 1|           {max_norm_error:.2e}");
    println!("max relative energy err {energy:.2e}");
    println!("max relative J error    {momentum:.2e}");
    println!("Newton iterations/step  {:.2}", run.newton.mean());
    println!("time per step           {best:.0} ns");
    let summary = serde_json::json!({
        "model": SphericalPendulum::MODEL,
        "scheme": "hamel_averaged",
        "kinematics": "averaged",
        "steps": steps,
        "h": h,
        "max_energy_error_rel": energy,
        "max_norm_error": max_norm_error,
        "max_momentum_error_rel": momentum,
        "newton_iterations_mean": run.newton.mean(),
        "ns_per_step": best,
    });
    println!("{summary}");
    Ok(())
}
