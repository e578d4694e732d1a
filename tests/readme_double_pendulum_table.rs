//! The README's double-pendulum table (`cargo run --release --example
//! double_pendulum`, W95 Pattern I, 30 s at h = 0.01) recomputed with the
//! same derives and compared, every column but `ns/step`.

use hamel::{simulate, Integrator, State, StepSystem};

macro_rules! dsp {
    ($name:ident, $model:literal, $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel(model = $model, $($key = $val),*)]
        pub struct $name {
            pub m1: f64,
            pub m2: f64,
            pub l1: f64,
            pub l2: f64,
            pub g: f64,
        }
    };
}

dsp!(
    Averaged,
    "models/double_spherical_pendulum.hamel",
    kinematics = "averaged"
);
dsp!(
    Midpoint,
    "models/double_spherical_pendulum.hamel",
    kinematics = "midpoint"
);
dsp!(
    Rattle,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
dsp!(
    Em,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
dsp!(
    Verlet,
    "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

fn norm(a: f64, b: f64, c: f64) -> f64 {
    (a * a + b * b + c * c).sqrt()
}

/// The example's link-length error: relative in Cartesian positions, of the
/// unit directors in director form.
fn link_error(z: &[f64], cartesian: bool) -> f64 {
    if cartesian {
        let a = (norm(z[0], z[1], z[2]) - 4.0).abs() / 4.0;
        let b = (norm(z[3] - z[0], z[4] - z[1], z[5] - z[2]) - 3.0).abs() / 3.0;
        a.max(b)
    } else {
        (norm(z[0], z[1], z[2]) - 1.0)
            .abs()
            .max((norm(z[3], z[4], z[5]) - 1.0).abs())
    }
}

/// max |ΔE/E|, max |ΔJ/J|, the link-length error and the mean Newton iterations.
fn row<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    cartesian: bool,
) -> [f64; 4] {
    let mut s = start;
    let mut constraint: f64 = 0.0;
    let run = simulate(sys, &mut s, 0.01, 3000, |st| {
        constraint = constraint.max(link_error(st.z.as_slice(), cartesian))
    })
    .unwrap();
    let m = &run.monitor;
    [
        m.get("energy").unwrap().max_rel_error,
        m.get("J").unwrap().max_rel_error,
        constraint,
        run.newton.mean(),
    ]
}

#[test]
fn the_readme_double_pendulum_table_says_what_the_code_gives() {
    let (a, md, r, e, v) = (
        Averaged::with_defaults(),
        Midpoint::with_defaults(),
        Rattle::with_defaults(),
        Em::with_defaults(),
        Verlet::with_defaults(),
    );
    let measured = [
        ("hamel_averaged", row(&a, a.initial("pattern_I").unwrap(), false)),
        ("hamel_midpoint", row(&md, md.initial("pattern_I").unwrap(), false)),
        ("rattle", row(&r, r.initial("pattern_I").unwrap(), true)),
        ("energy_momentum", row(&e, e.initial("pattern_I").unwrap(), true)),
        ("stormer_verlet", row(&v, v.initial("pattern_I").unwrap(), true)),
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
