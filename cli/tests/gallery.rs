//! The gallery's checks (`hamel_cli::gallery`): every model file in
//! `models/gallery/` has a physics check under every scheme that applies to
//! it, each check passes on both run-time back-ends, and the README's counts
//! are the gallery's.

use std::collections::BTreeSet;

use hamel_cli::gallery::{checks, run_all, source, MODELS};
use hamel_cli::{all_schemes, Backend};

fn gallery_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/gallery")
}

/// The gallery's model files on disk, by name.
fn files() -> BTreeSet<String> {
    std::fs::read_dir(gallery_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "hamel").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn every_gallery_file_is_built_in_and_checked_under_every_scheme_that_applies() {
    let on_disk = files();
    let built_in: BTreeSet<String> = MODELS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(on_disk, built_in, "models/gallery and gallery::MODELS differ");
    for (name, src) in MODELS {
        let path = gallery_dir().join(format!("{name}.hamel"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), *src, "{name}: stale copy");
    }
    let all = checks();
    for name in &on_disk {
        let model = hamel_load::load_source(name, source(name).unwrap(), &[]).unwrap();
        let checked: BTreeSet<&str> = all
            .iter()
            .filter(|c| c.model == name)
            .flat_map(|c| c.schemes.iter().copied())
            .collect();
        for s in all_schemes() {
            let applies = s.derive(&model).is_ok();
            assert_eq!(
                applies,
                checked.contains(s.name()),
                "{name} under {}: applies = {applies}, checked = {}",
                s.name(),
                checked.contains(s.name())
            );
        }
    }
}

#[test]
fn every_gallery_check_passes_on_both_back_ends() {
    for backend in Backend::ALL {
        let rows = run_all(backend, |r| {
            eprintln!(
                "{backend} {:<32} {:<16} {:.2e}{} (bound {:.0e}) {}",
                r.model,
                r.scheme,
                r.figure.value,
                r.figure.order.map_or(String::new(), |p| format!(", order {p:.3}")),
                r.bound,
                if r.passes() { "ok" } else { "FAILED" }
            )
        })
        .unwrap();
        let failed: Vec<String> = rows
            .iter()
            .filter(|r| !r.passes())
            .map(|r| format!("{} {} ({}): {:?}", r.model, r.scheme, r.what, r.figure))
            .collect();
        assert!(failed.is_empty(), "{backend}: {failed:#?}");
    }
}

#[test]
fn the_readme_counts_the_gallery() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let models = files().len();
    let cases: BTreeSet<(&str, &str)> = checks()
        .iter()
        .flat_map(|c| c.schemes.iter().map(move |s| (c.model, *s)))
        .collect();
    let want = format!(
        "**{models} models, {} (model, scheme) cases, {} checks**",
        cases.len(),
        checks().iter().map(|c| c.schemes.len()).sum::<usize>()
    );
    assert!(readme.contains(&want), "README.md should say {want}");
    // One table row per model, naming the schemes its checks run under.
    let order = [
        "hamel_averaged",
        "hamel_midpoint",
        "stormer_verlet",
        "rattle",
        "energy_momentum",
    ];
    for name in files() {
        let schemes: Vec<&str> = order
            .iter()
            .copied()
            .filter(|s| cases.contains(&(name.as_str(), *s)))
            .collect();
        let row = format!("| `{name}` | {} |", schemes.join(", "));
        assert!(
            readme.contains(&row),
            "README.md's gallery table should have the row {row}"
        );
    }
}
