//! `hamel check` on good and bad model files.

use std::process::Command;

fn hamel(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the hamel binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn checks_every_shipped_model() {
    let models: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../models"))
        .unwrap()
        .map(|e| format!("models/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".hamel"))
        .collect();
    let args: Vec<&str> = std::iter::once("check")
        .chain(models.iter().map(String::as_str))
        .collect();
    let (ok, out, err) = hamel(&args);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("energy_momentum    14 unknowns"), "{out}");
    assert!(
        out.contains("rattle             not applicable: rattle needs a model in generalized coordinates"),
        "{out}"
    );
}

#[test]
fn sizes_can_be_set() {
    let (ok, out, _) = hamel(&["check", "models/spherical_chain.hamel", "--size", "N=3"]);
    assert!(ok);
    assert!(
        out.contains("9 coordinate(s)") && out.contains("hamel              21 unknowns"),
        "{out}"
    );
}

#[test]
fn errors_name_the_place_and_fail() {
    let (ok, _, err) = hamel(&["check", "tests/ui/models/bad_names.hamel"]);
    assert!(!ok);
    assert!(
        err.contains("--> tests/ui/models/bad_names.hamel:5:37") && err.contains("unknown name `kk`"),
        "{err}"
    );
    assert!(err.contains("2 error(s)"), "{err}");
    let (ok, _, err) = hamel(&["check", "models/none.hamel"]);
    assert!(
        !ok && err.contains("cannot read model file `models/none.hamel`"),
        "{err}"
    );
    let (ok, _, err) = hamel(&["check", "models/spherical_chain.hamel", "--size", "N"]);
    assert!(!ok && err.contains("expected NAME=VALUE"), "{err}");
}
