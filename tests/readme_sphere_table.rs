//! The README's published-case table (`cargo run --release --example
//! sphere_comparison`) quotes accuracy figures: this test recomputes them
//! with the example's own module (`examples/cases/sphere.rs`), and fails when the README
//! no longer says what the code gives. (Timings, the `ns/step` column, are
//! the machine's and are not checked.)

#[path = "../examples/cases/sphere.rs"]
mod sphere;
use sphere::{accuracy, Hamel, Rattle, StormerVerlet};

/// A quoted figure (three significant digits) agrees with a measured one:
/// within rounding above round-off; below 1e-11 both are round-off walks,
/// and the quote only has to stay round-off.
fn agrees(quoted: f64, measured: f64) -> bool {
    if quoted < 1e-11 {
        return measured < 1e-11;
    }
    (measured / quoted - 1.0).abs() < 0.01
}

#[test]
fn the_readme_published_case_table_says_what_the_code_gives() {
    let (a, v, r) = (
        Hamel::with_defaults(),
        StormerVerlet::with_defaults(),
        Rattle::with_defaults(),
    );
    let measured = [
        (
            "hamel_averaged",
            accuracy(&a, a.initial("published").unwrap(), 1.0).unwrap(),
        ),
        (
            "stormer_verlet",
            accuracy(&v, v.initial("published").unwrap(), v.r).unwrap(),
        ),
        ("rattle", accuracy(&r, r.initial("published").unwrap(), r.r).unwrap()),
    ];
    let readme = include_str!("../README.md");
    let table = readme
        .split("scheme               max |ΔE|   max |ΔE/E|   constraint   max |ΔJ/J|    ns/step   Newton")
        .nth(1)
        .expect("the README's published-case table")
        .split("```")
        .next()
        .unwrap();
    for (name, got) in measured {
        let got = [
            got.energy_abs,
            got.energy_rel,
            got.constraint,
            got.momentum_rel,
            got.newton,
        ];
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row `{name}` in the README's table"));
        let cells: Vec<f64> = line.split_whitespace().skip(1).map(|c| c.parse().unwrap()).collect();
        // Columns: |ΔE|, |ΔE/E|, constraint, |ΔJ/J|, ns/step, Newton.
        let quoted = [cells[0], cells[1], cells[2], cells[3], cells[5]];
        for (k, (q, m)) in quoted.iter().zip(got).enumerate() {
            let ok = if k == 4 { (q - m).abs() < 0.006 } else { agrees(*q, m) };
            assert!(ok, "README `{name}` column {k}: quotes {q:e}, the code gives {m:e}");
        }
    }
}
