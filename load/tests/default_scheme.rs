//! What the default scheme (`hamel`: discrete Hamel with midpoint kinematics)
//! and the averaged form (`hamel_averaged`, ZLB12) conserve, per class of
//! model — measured here, and checked against the README's table so that the
//! figures it quotes cannot drift.
//!
//! Print the table: `cargo test --release -p hamel-load --test default_scheme -- --nocapture`.

use hamel_load::{compile, read_model, run, Backend, RunOptions, Scheme};

/// A class of model, the run that stands for it, and the quantities it keeps.
struct Case {
    class: &'static str,
    file: &'static str,
    init: &'static str,
    h: f64,
    steps: u64,
    quantities: &'static [&'static str],
}

const CASES: [Case; 6] = [
    Case {
        class: "holonomic, body frame",
        file: "spherical_pendulum",
        init: "published",
        h: 0.2,
        steps: 10_000,
        quantities: &["energy", "J"],
    },
    Case {
        class: "nonholonomic, L free of q",
        file: "chaplygin_sleigh",
        init: "push",
        h: 0.05,
        steps: 1_000,
        quantities: &["energy"],
    },
    Case {
        class: "rigid body, Euler–Poisson frame",
        file: "gallery/free_rigid_body",
        init: "tumbling",
        h: 0.05,
        steps: 1_000,
        quantities: &["energy", "spatial_momentum"],
    },
    Case {
        class: "heavy top",
        file: "gallery/heavy_top",
        init: "tilted",
        h: 0.005,
        steps: 1_000,
        quantities: &["energy", "vertical_momentum"],
    },
    Case {
        class: "central force, Cartesian",
        file: "gallery/kepler",
        init: "perihelion",
        h: 0.01,
        steps: 1_000,
        quantities: &["energy", "L"],
    },
    Case {
        class: "two bodies, director chain",
        file: "double_spherical_pendulum",
        init: "pattern_I",
        h: 0.01,
        steps: 3_000,
        quantities: &["energy", "J"],
    },
];

/// Below this a figure is round-off, and the table says so instead of a number.
const ROUND_OFF: f64 = 1e-12;

fn cell(e: f64) -> String {
    if e < ROUND_OFF {
        "round-off".into()
    } else {
        format!("{e:.1e}")
    }
}

/// `max |I − I₀| / |I₀|` of each quantity of `case` under `scheme`.
fn measure(case: &Case, scheme: Scheme) -> Vec<f64> {
    let path = format!("{}/../models/{}.hamel", env!("CARGO_MANIFEST_DIR"), case.file);
    let model = read_model(path.as_ref(), &[]).unwrap();
    let sys = compile(&model, scheme, Backend::Jit).unwrap();
    let opt = RunOptions {
        h: case.h,
        steps: case.steps,
        compensated: false,
        record_every: case.steps,
        inputs: None,
        newton: Default::default(),
    };
    let r = run(&sys, sys.initial(case.init).unwrap(), None, &opt).unwrap();
    let reports = r.monitor.reports();
    case.quantities
        .iter()
        .map(|q| {
            reports
                .iter()
                .find(|r| r.name == *q)
                .unwrap_or_else(|| panic!("{}: no quantity {q}", case.file))
                .max_rel_error
        })
        .collect()
}

/// The README's table between its markers, as (model, quantity) → (averaged, midpoint) cells.
fn readme_table() -> Vec<(String, String, String, String)> {
    let readme = include_str!("../../README.md");
    let body = readme
        .split("<!-- conservation table: load/tests/default_scheme.rs -->")
        .nth(1)
        .and_then(|s| s.split("<!-- end of conservation table -->").next())
        .expect("the README has the conservation table between its markers");
    body.lines()
        .filter(|l| l.starts_with('|') && !l.contains("---") && !l.contains("class of model"))
        .map(|l| {
            let c: Vec<String> = l.split('|').map(|c| c.trim().trim_matches('`').to_string()).collect();
            // | class | model | quantity | hamel (midpoint) | hamel_averaged |
            (c[2].clone(), c[3].clone(), c[4].clone(), c[5].clone())
        })
        .collect()
}

fn agrees(quoted: &str, measured: f64) -> bool {
    if quoted == "round-off" {
        return measured < ROUND_OFF;
    }
    let q: f64 = quoted.parse().unwrap_or(f64::NAN);
    // Quoted to two significant digits.
    measured >= ROUND_OFF && (measured / q - 1.0).abs() < 0.06
}

#[test]
fn conservation_per_class_of_model_matches_the_readme() {
    let quoted = readme_table();
    let mut rows = vec![];
    let mut wrong = vec![];
    for case in &CASES {
        let mid = measure(case, Scheme::DEFAULT);
        let avg = measure(case, "hamel_averaged".parse().unwrap());
        for (i, q) in case.quantities.iter().enumerate() {
            let model = format!("{}.hamel", case.file.rsplit('/').next().unwrap());
            rows.push(format!(
                "| {} | `{model}` | {q} | {} | {} |",
                case.class,
                cell(mid[i]),
                cell(avg[i])
            ));
            match quoted.iter().find(|r| r.0 == model && r.1 == *q) {
                Some(r) if agrees(&r.2, mid[i]) && agrees(&r.3, avg[i]) => {}
                Some(r) => wrong.push(format!(
                    "{model} {q}: README says {} / {}, measured {:e} / {:e}",
                    r.2, r.3, mid[i], avg[i]
                )),
                None => wrong.push(format!("{model} {q}: not in the README's table")),
            }
        }
    }
    println!("{}", rows.join("\n"));
    assert_eq!(
        quoted.len(),
        rows.len(),
        "the README's table has rows this test does not measure"
    );
    assert!(
        wrong.is_empty(),
        "README conservation table is stale:\n{}",
        wrong.join("\n")
    );
}

/// Symmetries the midpoint form keeps to round-off and the averaged form
/// only to O(h²) (or not at all) are the reason it is the default.
#[test]
fn the_default_keeps_momentum_of_linear_symmetries_to_round_off() {
    for case in CASES.iter().filter(|c| c.file == "gallery/kepler") {
        let mid = measure(case, Scheme::DEFAULT);
        let avg = measure(case, "hamel_averaged".parse().unwrap());
        assert!(mid[1] < ROUND_OFF, "angular momentum under the default: {:e}", mid[1]);
        assert!(
            avg[1] > 1e3 * mid[1].max(1e-16),
            "the averaged form keeps it too: {:e}",
            avg[1]
        );
    }
}

#[test]
fn hamel_names_the_midpoint_form() {
    assert_eq!("hamel".parse::<Scheme>().unwrap(), Scheme::DEFAULT);
    assert_eq!(Scheme::DEFAULT.name(), "hamel_midpoint");
    assert_ne!("hamel_averaged".parse::<Scheme>().unwrap(), Scheme::DEFAULT);
    let typo = "hamel_midpiont".parse::<Scheme>().unwrap_err().to_string();
    assert!(typo.contains("unknown scheme `hamel_midpiont`"), "{typo}");
}
