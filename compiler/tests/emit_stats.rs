//! Emitted code for the spherical pendulum: sizes after CSE, and bounded bodies.

use hamel_compiler::emit::rust;
use hamel_compiler::scheme::Scheme;

#[test]
fn pendulum_functions_are_small_after_cse() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/spherical_pendulum.hamel"
    ))
    .unwrap();
    let model = hamel_compiler::load("spherical_pendulum.hamel", &src).unwrap();
    for kin in ["averaged", "midpoint"] {
        let sys = Scheme::from_names("hamel", Some(kin)).unwrap().derive(&model).unwrap();
        let mut g = sys.graph.clone();
        for f in sys.functions() {
            let (ts, st) = rust::function(&mut g, &f).unwrap();
            println!("{kin} {}: {} ops, {} part(s)", f.name, st.ops, st.parts);
            if std::env::var("HAMEL_SHOW").is_ok() {
                println!("{ts}");
            }
            assert!(st.ops < 200, "{} has {} ops", f.name, st.ops);
        }
    }
}

#[test]
fn double_pendulum_sizes() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/double_spherical_pendulum.hamel"
    ))
    .unwrap();
    let model = hamel_compiler::load("double_spherical_pendulum.hamel", &src).unwrap();
    for kin in ["averaged", "midpoint"] {
        let sys = Scheme::from_names("hamel", Some(kin)).unwrap().derive(&model).unwrap();
        let mut g = sys.graph.clone();
        for f in sys.functions() {
            let (_, st) = rust::function(&mut g, &f).unwrap();
            println!("{kin} {}: {} ops, {} part(s)", f.name, st.ops, st.parts);
        }
    }
}
