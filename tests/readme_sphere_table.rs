//! The README's published-case table (`cargo run --release --example
//! sphere_comparison`) quotes accuracy figures: this test recomputes them
//! with the same derives, steps and initial state, and fails when the README
//! no longer says what the code gives. (Timings, the `ns/step` column, are
//! the machine's and are not checked.)

use hamel::{simulate, Integrator, State, StepSystem};

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
pub struct Averaged {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "stormer_verlet")]
pub struct Verlet {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "rattle")]
pub struct Rattle {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

/// max |ΔE|, max |ΔE/E|, the relative length error, max |ΔJ/J| and the mean
/// Newton iterations, as the example computes them.
fn row<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    length: f64,
) -> [f64; 5] {
    let mut s = start;
    let run = simulate(sys, &mut s, 0.2, 10_000, |_| {}).unwrap();
    let m = &run.monitor;
    let len = m.get("length").unwrap();
    let constraint = (len.max - length).abs().max((len.min - length).abs()) / length;
    let e = m.get("energy").unwrap();
    [
        e.max_abs_error,
        e.max_rel_error,
        constraint,
        m.get("J").unwrap().max_rel_error,
        run.newton.mean(),
    ]
}

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
        Averaged::with_defaults(),
        Verlet::with_defaults(),
        Rattle::with_defaults(),
    );
    let measured = [
        ("hamel_averaged", row(&a, a.initial("published").unwrap(), 1.0)),
        ("stormer_verlet", row(&v, v.initial("published").unwrap(), v.r)),
        ("rattle", row(&r, r.initial("published").unwrap(), r.r)),
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
