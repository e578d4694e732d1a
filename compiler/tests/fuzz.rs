//! Fuzzing the front end (parser, lowering, every scheme's derivation) with
//! proptest: mutated model files and generated models. Nothing may panic or
//! hang; every input ends in a model or in located errors.
//!
//! Longer run: `PROPTEST_CASES=20000 cargo test --release -p hamel-compiler --test fuzz`
//! (the variable sets the number of cases of each property; CI runs 300 + 200).

use hamel_compiler::scheme::Scheme;

/// Cases per property: `PROPTEST_CASES` if set, else `ci`.
fn cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ci)
}
use proptest::prelude::*;

const MODELS: &[&str] = &[
    include_str!("../../models/spherical_pendulum.hamel"),
    include_str!("../../models/spherical_pendulum_angles.hamel"),
    include_str!("../../models/spherical_pendulum_cartesian.hamel"),
    include_str!("../../models/double_spherical_pendulum_cartesian.hamel"),
    include_str!("../../models/spherical_chain.hamel"),
];

/// Runs the whole front end; returns whether the model loaded.
fn front_end(src: &str) -> bool {
    match hamel_compiler::load("fuzz.hamel", src) {
        Ok(model) => {
            for s in Scheme::LIST {
                let _ = s.derive(&model);
            }
            true
        }
        Err(diags) => {
            assert!(!diags.0.is_empty());
            for d in &diags.0 {
                assert!(d.to_string().contains("fuzz.hamel"), "an error without its place: {d}");
            }
            false
        }
    }
}

const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    "=",
    "'",
    "+",
    "-",
    "*",
    "/",
    "^",
    "0",
    "1",
    "2.5",
    "1e3",
    "x",
    "q",
    "e[i]",
    "i",
    "N",
    "for i in 1..=N {",
    "sum(i in 1..=2: ",
    "sqrt(",
    "cross(",
    "dot(",
    "norm(",
    "ln(",
    "0/0",
    "let y = ",
    "lagrangian = ",
    "constraint ",
    "holonomic ",
    "initial s {",
    "size N = ",
    "vec3",
    "\n",
    " ",
    "//",
    "/*",
    "*/",
    "frame {",
    "coordinates {",
    "velocities {",
    "parameters {",
    "-1e308*1e308",
];

fn mutation() -> impl Strategy<Value = (usize, usize, usize, String)> {
    (
        0..MODELS.len(),
        any::<usize>(),
        0usize..40,
        prop::collection::vec(prop::sample::select(PIECES), 0..6).prop_map(|v| v.concat()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(300), ..ProptestConfig::default() })]

    #[test]
    fn mutated_model_files_never_panic((m, at, del, insert) in mutation()) {
        let src = MODELS[m];
        let mut cut = at % (src.len() + 1);
        while !src.is_char_boundary(cut) { cut -= 1; }
        let mut end = (cut + del).min(src.len());
        while !src.is_char_boundary(end) { end -= 1; }
        let mutated = format!("{}{}{}", &src[..cut], insert, &src[end..]);
        front_end(&mutated);
    }
}

/// Random scalar expressions over the given names.
fn expr(names: Vec<&'static str>) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(names).prop_map(str::to_string),
        (-3.0f64..3.0).prop_map(|x| format!("{x:.3}")),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/", "^"]),
                inner.clone()
            )
                .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            (
                prop::sample::select(vec![
                    "sin", "cos", "exp", "sqrt", "ln", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh"
                ]),
                inner.clone()
            )
                .prop_map(|(f, a)| format!("{f}({a})")),
            inner.prop_map(|a| format!("-{a}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    #[test]
    fn generated_models_never_panic(
        l in expr(vec!["q", "p", "q'", "p'", "k"]),
        c in expr(vec!["q", "p", "k"]),
        f in prop::bool::ANY,
    ) {
        let src = if f {
            format!("model g {{ parameters {{ k = 2 }} coordinates {{ q, p }} velocities {{ a, b }}
                frame {{ q' = a * {c}, p' = b + a * q }} lagrangian = a^2 + b^2 - {c} }}")
        } else {
            format!("model g {{ parameters {{ k = 2 }} coordinates {{ q, p }} lagrangian = {l}
                holonomic {c} = 1 initial s {{ q = 0.1, p = 0.2, q' = 0, p' = 0 }} }}")
        };
        front_end(&src);
    }
}

#[test]
fn deep_nesting_and_runaway_sizes_get_clear_errors() {
    let deep = format!(
        "model d {{ coordinates {{ q }} lagrangian = {}q{} }}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let e = hamel_compiler::load("d.hamel", &deep).unwrap_err().to_string();
    assert!(e.contains("nested more than"), "{e}");
    let long = format!(
        "model d {{ coordinates {{ q }} lagrangian = q'^2 {} }}",
        "+ q ".repeat(60_000)
    );
    let e = hamel_compiler::load("d.hamel", &long).unwrap_err().to_string();
    assert!(e.contains("operators"), "{e}");
    let huge = "model d { size N = 10000 coordinates { q } for i in 1..=N { for j in 1..=N { let a[i] = q } } lagrangian = q'^2 }";
    let e = hamel_compiler::load("d.hamel", huge).unwrap_err();
    assert_eq!(e.0.len(), 1, "one error, not a cascade: {e}");
    assert!(e.0[0].message.contains("unroll to more than"), "{e}");
    let sums = "model d { coordinates { q } lagrangian = sum(i in 1..=9999: sum(j in 1..=9999: q'^2)) }";
    let e = hamel_compiler::load("d.hamel", sums).unwrap_err().to_string();
    assert!(e.contains("expression nodes"), "{e}");
}
