//! README.md's speed tables are rendered from `bench/speed/results.json`
//! (the speed example's last run with `--write`), not typed by hand.

#[path = "../bench/speed/render.rs"]
mod render;

#[test]
fn readme_speed_tables_are_rendered_from_the_committed_results() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("bench/speed/results.json")).unwrap()).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = render::section(&readme).expect("README.md has the speed section markers");
    assert_eq!(
        section,
        render::render(&results),
        "README's speed tables differ from bench/speed/results.json: run \
         `cargo run --release --example speed -- --write`"
    );
}

#[test]
fn the_committed_results_cover_every_table_row() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("bench/speed/results.json")).unwrap()).unwrap();
    for field in ["date", "machine", "load_average"] {
        assert!(r["meta"][field].is_string(), "meta.{field}");
    }
    for key in ["generated_ns", "hand_written_ns", "jit_ns"] {
        assert!(r["sphere"][key].as_f64().is_some_and(|x| x > 0.0), "sphere.{key}");
    }
    assert_eq!(r["sphere"]["jit_same_bits"], true);
    let sizes: Vec<u64> = r["chain"]["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [2, 4, 8, 16, 32, 64, 128]);
    // Every chain form at every size, from a motion named in the results,
    // timed over the same steps at every size and checked over 1000.
    assert!(r["chain"]["initial"].is_string(), "chain.initial");
    assert!(
        r["chain"]["timed_steps"].as_u64().is_some_and(|t| t > 0),
        "chain.timed_steps"
    );
    assert!(r["chain"]["exponent_16_128"]["hamel_averaged"].is_f64());
    let checked = &r["chain"]["checked_steps"];
    for k in 0..sizes.len() {
        assert_eq!(checked[k].as_u64(), Some(1000), "chain.checked_steps[{k}]");
    }
    for (key, times) in render::CHAIN_SCHEMES {
        let times = &r["chain"][times];
        let its = &r["chain"]["iterations_per_step"][key];
        let facs = &r["chain"]["factorizations_per_step"][key];
        let good = &r["chain"]["good_steps"][key];
        for k in 0..sizes.len() {
            assert_eq!(
                times[k].is_f64(),
                its[k].as_f64().is_some_and(|x| x >= 1.0),
                "chain.iterations_per_step.{key}[{k}]"
            );
            // At least one factorization a step, at most one an iteration.
            assert_eq!(
                times[k].is_f64(),
                facs[k]
                    .as_f64()
                    .is_some_and(|f| f >= 1.0 && f <= its[k].as_f64().unwrap_or(0.0)),
                "chain.factorizations_per_step.{key}[{k}]"
            );
            assert_eq!(
                times[k].is_f64(),
                good[k].as_u64().is_some_and(|g| g <= checked[k].as_u64().unwrap_or(0)),
                "chain.good_steps.{key}[{k}]"
            );
        }
    }
    for key in [
        "hamel_ns",
        "hamel_midpoint_ns",
        "rattle_ns",
        "stormer_verlet_ns",
        "energy_momentum_ns",
    ] {
        let row = r["chain"][key].as_array().unwrap();
        assert!(
            row.iter().all(|x| x.as_f64().is_some_and(|x| x > 0.0)),
            "chain.{key}: every size"
        );
    }
}
