//! Emitted code for the spherical pendulum: sizes after CSE, and bounded bodies.

use hamel_compiler::emit::rust;
use hamel_compiler::scheme::{Scheme, TableauChoice};

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
            let (ts, st) = rust::function(&mut g, &f, rust::Role::Step, &|_| None).unwrap();
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
            let (_, st) = rust::function(&mut g, &f, rust::Role::Step, &|_| None).unwrap();
            println!("{kin} {}: {} ops, {} part(s)", f.name, st.ops, st.parts);
            // Bodies up to WHOLE instructions are emitted whole (the fused
            // Hamel kernel, 2103, among them).
            assert!(st.ops <= rust::WHOLE, "{} has {} ops", f.name, st.ops);
            assert_eq!(st.parts, 1);
        }
    }
}

/// The tokens of the emitted function, as text.
fn emitted(g: &mut hamel_compiler::sym::Graph, f: &hamel_compiler::sym::Function, role: rust::Role) -> String {
    rust::function(g, f, role, &|_| None).unwrap().0.to_string()
}

#[test]
fn copies_use_unsafe_without_allowing_it_and_simd_false_emits_none() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/double_spherical_pendulum.hamel"
    ))
    .unwrap();
    let model = hamel_compiler::load("double_spherical_pendulum.hamel", &src).unwrap();
    let sys = Scheme::from_names("hamel_averaged", None)
        .unwrap()
        .derive(&model)
        .unwrap();
    let mut g = sys.graph.clone();
    let mut copied = 0;
    for f in sys.functions() {
        let with = emitted(&mut g, &f, rust::Role::Step);
        let without = emitted(&mut g, &f, rust::Role::StepBaseline);
        // An `allow(unsafe_code)` is an error under a user's `forbid` (E0453).
        assert!(!with.contains("unsafe_code"), "{}", f.name);
        assert!(!without.contains("unsafe"), "{}: `simd = false` emitted unsafe", f.name);
        if with.contains("_avx2") {
            copied += 1;
            assert!(with.contains("unsafe fn") && with.contains("is_x86_feature_detected"));
            assert!(with.contains("isa :: ceiling ()"), "the dispatcher reads the ceiling");
        }
    }
    assert!(copied > 0, "the fused kernel has copies");
}

#[test]
fn long_bodies_are_split_into_chunks() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain.hamel")).unwrap();
    let model = hamel_compiler::model::load_with_sizes("spherical_chain.hamel", &src, &[("N".to_string(), 8)]).unwrap();
    let sys = Scheme::from_names("hamel_averaged", None)
        .unwrap()
        .derive(&model)
        .unwrap();
    let mut g = sys.graph.clone();
    let mut split = 0;
    for f in sys.functions() {
        let (_, st) = rust::function(&mut g, &f, rust::Role::Step, &|_| None).unwrap();
        let expect = if st.ops <= rust::WHOLE {
            1
        } else {
            st.ops.div_ceil(rust::PART)
        };
        assert_eq!(st.parts, expect, "{}: {} ops", f.name, st.ops);
        split += usize::from(st.parts > 1);
    }
    // The 8-link chain's fused kernel exercises split bodies (tests/chain.rs runs it).
    assert!(split > 0);
}

#[test]
fn every_model_file_loads_and_derives_every_applicable_scheme() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "hamel") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let model = hamel_compiler::load(&name, &src).unwrap_or_else(|e| panic!("{e}"));
        let mut derived = Vec::new();
        for s in Scheme::LIST {
            if let Ok(sys) = s.derive(&model) {
                derived.push(format!(
                    "{} ({}x{})",
                    sys.scheme,
                    sys.unknowns.len(),
                    sys.unknowns.len()
                ));
            }
        }
        println!(
            "{name}: {} initial state(s); {}",
            model.initials.len(),
            derived.join(", ")
        );
        assert!(!derived.is_empty());
        count += 1;
    }
    assert!(count >= 7);
}

#[test]
fn double_double_residual_is_emitted_for_small_bodies() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/spherical_pendulum.hamel"
    ))
    .unwrap();
    let model = hamel_compiler::load("spherical_pendulum.hamel", &src).unwrap();
    let sys = Scheme::from_names("hamel", Some("averaged"))
        .unwrap()
        .derive(&model)
        .unwrap();
    let mut g = sys.graph.clone();
    let f = sys
        .functions()
        .into_iter()
        .find(|f| f.name == hamel_kernel::Kernel::Residual)
        .unwrap();
    let ts = rust::function_dd(&mut g, &f, &[hamel_kernel::Arg::Z])
        .unwrap()
        .expect("small body");
    let text = ts.to_string();
    if std::env::var("HAMEL_SHOW").is_ok() {
        println!("{text}");
    }
    assert!(text.contains("z_lo"), "{text}");
}

#[test]
fn readme_model_examples_load() {
    // Every `model … { … }` block of the README's model-file guide must load.
    let readme = include_str!("../../README.md");
    let mut count = 0;
    for block in readme.split("```text").skip(1) {
        let body = block.split("```").next().unwrap_or_default();
        let Some(start) = body.find("model ") else { continue };
        if !body[start..]
            .trim_start_matches("model ")
            .starts_with(|c: char| c.is_ascii_alphabetic())
        {
            continue;
        }
        hamel_compiler::load("README.md", &body[start..]).unwrap_or_else(|e| panic!("README example:\n{e}"));
        count += 1;
    }
    assert!(count >= 3, "found {count} examples");
}

/// The emitted integrator of `model` (a file under `models/`) with `N = n`:
/// its text and statistics.
fn integrator(model: &str, scheme: &str, n: i64) -> (String, hamel_compiler::emit::integrator::IntegratorStats) {
    integrator_with(model, scheme, n, TableauChoice::Auto)
}

/// [`integrator`], keeping the model's tableau as `tableau` says.
fn integrator_with(
    model: &str,
    scheme: &str,
    n: i64,
    tableau: TableauChoice,
) -> (String, hamel_compiler::emit::integrator::IntegratorStats) {
    use hamel_compiler::emit::integrator::{emit, Target};
    let path = format!("{}/../models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap();
    let model = hamel_compiler::model::load_with_sizes(&path, &src, &[("N".to_string(), n)]).unwrap();
    let sys = Scheme::from_names(scheme, None)
        .unwrap()
        .derive_with(&model, tableau)
        .unwrap();
    let ident = proc_macro2::Ident::new("Chain", proc_macro2::Span::call_site());
    let target = Target {
        ident: &ident,
        model_path: &path,
        sensitivity: false,
        simd: true,
        order: 2,
    };
    let (tokens, stats) = emit(&sys, &target).unwrap();
    (tokens.to_string(), stats)
}

#[test]
fn a_long_chain_s_kernels_are_emitted_as_loops_and_its_code_stops_growing() {
    // Below `ROLL_ABOVE` instructions everything is straight-line.
    let (_, small) = integrator("spherical_chain_cartesian", "rattle", 8);
    assert_eq!(small.loops, 0);
    // The RATTLE chain's Jacobian, increment and invariants repeat per link.
    let (text, at32) = integrator("spherical_chain_cartesian", "rattle", 32);
    assert!(at32.loops >= 2, "{at32:?}");
    assert!(text.contains("for __i in 0 .."), "a loop over the links");
    let (text64, at64) = integrator("spherical_chain_cartesian", "rattle", 64);
    assert!(at64.loops >= 3, "{at64:?}");
    // Twice the links, twice the arithmetic, not twice the code: the loops
    // are one copy of a link's instructions whatever N is.
    assert!(at64.ops > 19 * at32.ops / 10, "{} vs {}", at64.ops, at32.ops);
    let (l32, l64) = (rust::statements(&text), rust::statements(&text64));
    println!(
        "RATTLE chain: {} / {} instructions, {l32} / {l64} statements at N = 32 / 64",
        at32.ops, at64.ops
    );
    assert!(l64 < l32 * 13 / 10, "{l32} → {l64} statements");
    // The 8-link director chain's Jacobian already repeats (what
    // `tests/rolled_derive.rs` steps).
    let (_, director) = integrator("spherical_chain", "hamel_midpoint", 8);
    assert!(director.loops >= 1, "{director:?}");
}

#[test]
fn a_long_chain_s_dense_functions_called_now_and_then_are_data() {
    // Written out, the director chain's kinetic metric, observation system,
    // momenta and invariants couple every link: none repeats per link, and
    // they were most of its code (100 634 statements at 32 links).
    let dense = TableauChoice::Substitute;
    let (small_text, small) = integrator_with("spherical_chain", "hamel_midpoint", 8, dense);
    assert_eq!(small.data, 0, "short functions stay code");
    assert!(!small_text.contains("__PROGRAM"));
    let (_, at24) = integrator_with("spherical_chain", "hamel_midpoint", 24, dense);
    assert_eq!(at24.data, 4, "metric, observation, initial state, invariants: {at24:?}");
}

#[test]
fn a_long_chain_s_functions_of_a_state_read_its_tableau_and_stay_code() {
    // With the tableau kept (the default from 6 links) they read its
    // members as locals, the matrices as products with a direction: short
    // enough to stay code. What is left grows little with the links (the
    // step's kernels are loops) while the arithmetic grows faster.
    let (text, at24) = integrator("spherical_chain", "hamel_midpoint", 24);
    assert_eq!(at24.data, 0, "{at24:?}");
    let (text32, at32) = integrator("spherical_chain", "hamel_midpoint", 32);
    assert_eq!(at32.data, 0, "{at32:?}");
    let (s24, s32) = (rust::statements(&text), rust::statements(&text32));
    println!(
        "director chain: {} / {} instructions, {s24} / {s32} statements at N = 24 / 32",
        at24.ops, at32.ops
    );
    assert!(s32 < 20_000 && s32 < s24 * 13 / 10, "{s24} → {s32} statements");
    assert!(at32.ops > 13 * at24.ops / 10, "{} vs {}", at32.ops, at24.ops);
}
