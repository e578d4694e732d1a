//! The README's double-pendulum table (`cargo run --release --example
//! double_pendulum`, W95 Pattern I, 30 s at h = 0.01) recomputed with the
//! example's own module (`examples/cases/double_pendulum.rs`) and compared,
//! every column but `ns/step`.

#[path = "../examples/cases/double_pendulum.rs"]
mod double_pendulum;
use double_pendulum::{accuracy, EnergyMomentum, HamelAveraged, HamelMidpoint, Rattle, StormerVerlet};

#[test]
fn the_readme_double_pendulum_table_says_what_the_code_gives() {
    let (a, md, r, e, v) = (
        HamelAveraged::with_defaults(),
        HamelMidpoint::with_defaults(),
        Rattle::with_defaults(),
        EnergyMomentum::with_defaults(),
        StormerVerlet::with_defaults(),
    );
    let measured = [
        (
            "hamel_averaged",
            accuracy(&a, a.initial("pattern_I").unwrap(), false).unwrap(),
        ),
        (
            "hamel_midpoint",
            accuracy(&md, md.initial("pattern_I").unwrap(), false).unwrap(),
        ),
        ("rattle", accuracy(&r, r.initial("pattern_I").unwrap(), true).unwrap()),
        (
            "energy_momentum",
            accuracy(&e, e.initial("pattern_I").unwrap(), true).unwrap(),
        ),
        (
            "stormer_verlet",
            accuracy(&v, v.initial("pattern_I").unwrap(), true).unwrap(),
        ),
    ];
    let readme = include_str!("../README.md");
    let table = readme
        .split("scheme             max |ΔE/E|   max |ΔJ/J|   constraint    ns/step   Newton")
        .nth(1)
        .expect("the README's double-pendulum table")
        .split("```")
        .next()
        .unwrap();
    for (name, got) in measured {
        let got = [got.energy, got.momentum, got.constraint, got.newton];
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row `{name}` in the README's table"));
        let cells: Vec<f64> = line.split_whitespace().skip(1).map(|c| c.parse().unwrap()).collect();
        // Columns: |ΔE/E|, |ΔJ/J|, constraint, ns/step, Newton.
        let quoted = [cells[0], cells[1], cells[2], cells[4]];
        for (k, (q, m)) in quoted.iter().zip(got).enumerate() {
            let ok = match k {
                3 => (q - m).abs() < 0.006,
                // Round-off walks: the quote only has to stay round-off.
                _ if *q < 1e-11 => m < 1e-11,
                _ => (m / q - 1.0).abs() < 0.01,
            };
            assert!(ok, "README `{name}` column {k}: quotes {q:e}, the code gives {m:e}");
        }
    }
}
