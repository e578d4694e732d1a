//! The size guard's estimate (`hamel_compiler::cost`) against the real
//! derivation, per scheme and size:
//!
//! ```text
//! cargo run --release -p hamel-compiler --example cost_accuracy -- \
//!     models/spherical_chain.hamel hamel_midpoint 32 64
//! ```
//!
//! prints, for each size, the estimate (its probes and exponents) and the
//! time of deriving the scheme there as a host does
//! ([`TableauChoice::Auto`]), on the CPU and on the clock, and their ratio.

use std::time::Instant;

use hamel_compiler::cost;
use hamel_compiler::scheme::{Scheme, TableauChoice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, scheme, sizes @ ..] = &args[..] else {
        return Err("usage: cost_accuracy MODEL SCHEME N...".into());
    };
    let src = std::fs::read_to_string(file)?;
    let scheme: Scheme = scheme.parse()?;
    println!("model, scheme, N, estimate s, probes, actual CPU s, actual wall s, estimate / actual CPU");
    for n in sizes {
        let sizes = [("N".to_string(), n.parse::<i64>()?)];
        let started = Instant::now();
        let e = cost::estimate_scheme(file, &src, &sizes, scheme).ok_or("no estimate")?;
        let probing = started.elapsed().as_secs_f64();
        let model = hamel_compiler::model::load_with_sizes(file, &src, &sizes).map_err(|d| d.to_string())?;
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        scheme.derive_with(&model, TableauChoice::Auto)?;
        let cpu = cpu_seconds() - cpu;
        let wall = wall.elapsed().as_secs_f64();
        println!(
            "{file}, {scheme}, {n}, {:.1}, {}{} at {} and {:.3} s at {} (p = {:.2}, {:.2} at N; probing took {probing:.1} s), {cpu:.1}, {wall:.1}, {:.2}",
            e.seconds,
            if e.tableau { "sparse, " } else { "" },
            format_args!("{:.3} s", e.probes[0].1),
            e.probes[0].0,
            e.probes[1].1,
            e.probes[1].0,
            e.exponent,
            e.exponent_at_size(),
            e.seconds / cpu
        );
    }
    Ok(())
}

/// Seconds on the CPU of this thread (Linux), as the estimate's probes are
/// timed; 0 elsewhere (the wall time is printed too).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns * 1e-9)
}
