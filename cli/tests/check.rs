//! `hamel check` on good and bad model files.

use std::process::Command;

mod common;

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
    assert!(out.contains("energy_momentum    2 unknowns"), "{out}");
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
        out.contains("9 coordinate(s)") && out.contains("hamel_midpoint     12 unknowns"),
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

/// A variant of a shipped model: `from` replaced by `to`, written to a temporary file.
fn variant(model: &str, from: &str, to: &str, tag: &str) -> std::path::PathBuf {
    let src = std::fs::read_to_string(format!("{}/../models/{model}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(src.contains(from), "{from}");
    let path = std::env::temp_dir().join(format!("hamel-check-{}-{tag}.hamel", std::process::id()));
    std::fs::write(&path, src.replacen(from, to, 1)).unwrap();
    path
}

#[test]
fn initial_states_that_cannot_run_are_refused_with_their_cause() {
    let cases = [
        (
            variant("spherical_pendulum.hamel", "m = 1.0", "m = 0.0", "m0"),
            "parameter(s) m = 0 remove the kinetic energy",
        ),
        (
            variant("spherical_pendulum.hamel", "r = 9.8", "r = 0", "r0"),
            "parameter(s) r = 0",
        ),
        (
            variant(
                "spherical_pendulum.hamel",
                "0.5 * m * r^2 * (xi[0]^2 + xi[1]^2)",
                "0 * xi[0]",
                "nokin",
            ),
            "the Lagrangian has no kinetic term in xi[0], xi[1]",
        ),
        (
            variant(
                "spherical_pendulum_director.hamel",
                "constraint  dot(w, e) = 0",
                "constraint  dot(w, e) = 0\n    constraint  2 * dot(w, e) = 0",
                "redundant",
            ),
            "constraints have rank 1: some repeat or combine others",
        ),
        (
            variant("spherical_pendulum_angles.hamel", "th = 0.3756", "th = 0", "pole"),
            "a singular point of the coordinates",
        ),
        (
            variant(
                "spherical_pendulum.hamel",
                "gamma' = cross(gamma, xi)",
                "gamma' = 0 * xi",
                "frame0",
            ),
            "moves only 1 of the 3 velocity directions",
        ),
        // The kinetic term is there (th'^4/4) but its Hessian 3 th'^2
        // vanishes at rest: not "no kinetic term".
        (
            variant(
                "gallery/planar_pendulum.hamel",
                "0.5 * m * l^2 * th'^2",
                "0.25 * th'^4",
                "quartic",
            ),
            "the Lagrangian's kinetic term in th' is not quadratic, and its second derivative in that velocity vanishes at this state (th' = 0), though not at other velocities",
        ),
    ];
    for (path, cause) in &cases {
        let (ok, out, err) = hamel(&["check", path.to_str().unwrap()]);
        assert!(!ok, "{out}");
        assert!(err.contains(cause), "{}: expected `{cause}` in\n{err}", path.display());
        assert!(err.contains("kinetic metric") || err.contains("frame"), "{err}");
        assert!(
            !cause.contains("not quadratic") || !err.contains("no kinetic term"),
            "{err}"
        );
        let _ = std::fs::remove_file(path);
    }
}

/// `simulate` of the angles model from th = 30°, th' = 0 with azimuth rate `rate`.
fn angles_run(rate: &str) -> (Option<i32>, serde_json::Value, String) {
    let out_dir = std::env::temp_dir().join(format!("hamel-check-{}-pole-{rate}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args([
            "simulate",
            "models/spherical_pendulum_angles.hamel",
            "--scheme",
            "hamel_midpoint",
            "--h",
            "0.1",
            "--steps",
            "3000",
            "--state",
            "th=0.5236",
            "--state",
            "th'=0",
            "--state",
            &format!("ph'={rate}"),
            "--no-plots",
            "--summary",
            "json",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let s = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    (out.status.code(), s, String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn a_pass_near_the_pole_of_spherical_angles_is_flagged() {
    let (code, s, stderr) = angles_run("0.05");
    // Energy is off by 9 % only (under the energy bound): the metric's
    // conditioning is what names the cause.
    assert_eq!(code, Some(3), "{s}\n{stderr}");
    assert!(
        stderr.contains("passed near a singularity of the coordinates"),
        "{stderr}"
    );
    assert_eq!(s["ok"], false);
    assert!(s["metric_condition_max"].as_f64().unwrap() > 100.0 * s["metric_condition_initial"].as_f64().unwrap());
    let e = s["max_energy_error_rel"].as_f64().unwrap();
    assert!(e > 1e-2 && e < 0.1, "{e}");
    // A resolved azimuth keeps the orbit away from the pole: not flagged.
    let (code, s, stderr) = angles_run("0.5");
    assert_eq!(code, Some(0), "{s}\n{stderr}");
    assert!(s["metric_condition_max"].as_f64().unwrap() < 10.0 * s["metric_condition_initial"].as_f64().unwrap());
}

#[test]
fn the_gallery_frames_check() {
    // Frames as the textbooks write them: Euler–Poisson (pointwise dependent
    // fields, no constraint), a cart carrying a director pendulum (an affine
    // action), SE(2) with body velocities (invertible).
    let models = [
        "models/gallery/heavy_top.hamel",
        "models/gallery/free_rigid_body.hamel",
        "models/gallery/cart_spherical_pendulum.hamel",
        "models/gallery/planar_body.hamel",
    ];
    let args: Vec<&str> = std::iter::once("check").chain(models).collect();
    let (ok, out, err) = hamel(&args);
    assert!(ok, "{out}\n{err}");
    assert_eq!(out.matches("hamel_midpoint     ").count(), 4, "{out}");
    assert!(!out.contains("hamel_midpoint     not applicable"), "{out}");
}

#[test]
fn a_model_no_scheme_applies_to_fails() {
    // |Γ| Γ × Ω is neither an action (not affine in Γ) nor invertible (Ψ is
    // singular everywhere), and nothing splits it into blocks.
    let path = variant(
        "gallery/heavy_top.hamel",
        "Gamma' = cross(Gamma, Omega)",
        "Gamma' = norm(Gamma) * cross(Gamma, Omega)",
        "noscheme",
    );
    let (ok, out, err) = hamel(&["check", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert!(!ok, "{out}\n{err}");
    assert!(err.contains("no scheme applies to model `heavy_top`"), "{err}");
    for why in [
        "hamel_midpoint     not applicable: hamel: the frame fits none of the rules",
        "is not affine in the coordinates",
        "singular at every sampled configuration",
        "write rotations as cross products",
    ] {
        assert!(out.contains(why), "expected `{why}` in\n{out}");
    }
}

#[test]
fn a_size_too_large_to_derive_is_refused_at_once_with_its_estimate() {
    // The director chain at N = 200 once compiled for more than 25 minutes
    // in silence; now small derivations (N = 8, 16, …) of each scheme
    // `check` derives measure its growth, and their sum is judged. At
    // N = 200 it now fits 20 s (a release build derives 256 links in about
    // 7 s); at N = 2000 it exceeds that limit in any build, as a user may
    // set it.
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args(["check", "models/spherical_chain.hamel", "--size", "N=2000"])
        .env("HAMEL_MAX_DERIVE_SECONDS", "20")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the hamel binary runs");
    let (ok, err) = (out.status.success(), String::from_utf8_lossy(&out.stderr));
    assert!(!ok);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert!(
        err.contains("deriving the model would take about")
            && err.contains("at N = 2000")
            && err.contains("HAMEL_MAX_DERIVE_SECONDS"),
        "{err}"
    );
}

#[test]
fn a_long_derivation_announced_reports_its_progress_in_a_log() {
    // `check --size N=40` announced about a minute per scheme and then said
    // nothing for minutes where standard error was a file or a pipe (as
    // here). N = 24 is announced where the N = 16 probe takes over 1.4 s
    // (3.4 s on the 2-core test machine); its progress must follow the note.
    let (ok, _, err) = hamel(&["check", "models/spherical_chain.hamel", "--size", "N=24"]);
    assert!(ok, "{err}");
    let Some(note) = err.find("note: deriving `spherical_chain` takes") else {
        eprintln!("N = 24 derives too fast here to be announced; nothing to check: {err}");
        return;
    };
    // Which schemes take long enough to report (2 s) depends on the
    // machine: the midpoint step, a sparse tableau at 24 links, may not.
    let after = &err[note..];
    assert!(
        ["hamel_midpoint", "hamel_averaged"]
            .iter()
            .any(|s| after.contains(&format!("deriving {s} for `spherical_chain` (72 coordinates)…"))),
        "{err}"
    );
    assert!(after.matches("  done in ").count() >= 1, "{err}");
}

/// A run from an energy at round-off: judged against the motion's kinetic
/// energy, which for the pendulum released from the horizontal reaches at
/// most `m g l` (at the bottom; the closed form of its energy).
#[test]
fn an_energy_at_round_off_is_not_a_false_alarm_and_a_blow_up_still_is() {
    let run = |scheme: &str, h: &str| {
        let out_dir = common::tmp(&format!("zero-energy-{scheme}-{h}"));
        let (code, stdout, _) = common::hamel(&[
            "simulate",
            "models/gallery/planar_pendulum.hamel",
            "--h",
            h,
            "--t-end",
            "10",
            "--state",
            "th=1.5707963267948966",
            "--scheme",
            scheme,
            "--no-plots",
            "--summary",
            "json",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let _ = std::fs::remove_dir_all(&out_dir);
        let s: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        (code, s, stdout)
    };
    let mgl = 9.81;
    for scheme in ["hamel_midpoint", "rattle", "energy_momentum"] {
        let (code, s, stdout) = run(scheme, "0.01");
        assert_eq!(code, Some(0), "{scheme}: {s}");
        assert!(s["energy_initial"].as_f64().unwrap().abs() < 1e-15, "{s}");
        let t = s["kinetic_energy_max"].as_f64().unwrap();
        assert!(t > 0.5 * mgl && t < mgl * (1.0 + 1e-6), "{scheme}: T_max {t}");
        let judged = s["max_energy_error_judged"].as_f64().unwrap();
        assert!(judged < 1e-3, "{scheme}: {judged}");
        assert!(stdout.contains("* relative to the largest kinetic energy"), "{stdout}");
    }
    // A step far too large for the swing: the energy, judged the same way,
    // is off by more than the bound and the run is flagged.
    let (code, s, _) = run("rattle", "0.5");
    assert_eq!(code, Some(3), "{s}");
    assert!(s["max_energy_error_judged"].as_f64().unwrap() > 0.1, "{s}");
}
