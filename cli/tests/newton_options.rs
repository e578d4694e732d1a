//! `--newton-tol` and `--newton-max-iter` on `simulate`, `compare` and
//! `sweep`: they reach the solve (fewer iterations, a step that fails), and
//! bad values are refused with the flag named, never a panic.

mod common;
use common::{hamel, tmp};

const DSP: &str = "models/double_spherical_pendulum.hamel";

/// The summary of a 300-step run of the double pendulum with `extra` flags.
fn summary(name: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tmp(name);
    let mut args = vec![
        "simulate",
        DSP,
        "--h",
        "0.01",
        "--steps",
        "300",
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = hamel(&args);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let _ = std::fs::remove_dir_all(dir);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[test]
fn a_looser_tolerance_takes_fewer_iterations_and_is_reported() {
    let strict = summary("strict", &[]);
    let loose = summary("loose", &["--newton-tol", "1e-6"]);
    let mean = |s: &serde_json::Value| s["newton_iterations_mean"].as_f64().unwrap();
    assert_eq!(strict["newton_tolerance"].as_f64(), Some(f64::EPSILON));
    assert_eq!(loose["newton_tolerance"].as_f64(), Some(1e-6));
    assert_eq!(strict["newton_iteration_bound"].as_u64(), Some(30));
    // About two iterations a step at machine precision; at 1e-6 the second
    // is mostly not needed.
    assert!(
        mean(&loose) < mean(&strict) - 0.5,
        "loose {} vs strict {}",
        mean(&loose),
        mean(&strict)
    );
    // The loose run is still a solution to about its tolerance.
    let e = loose["max_energy_error_rel"].as_f64().unwrap();
    assert!(e < 1e-2, "{e}");
}

#[test]
fn an_iteration_bound_of_one_fails_naming_the_step() {
    let dir = tmp("bound");
    let (code, out, err) = hamel(&[
        "simulate",
        DSP,
        "--h",
        "0.01",
        "--steps",
        "50",
        "--no-plots",
        "--newton-max-iter",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        err.contains("error: step 0: Newton did not converge in 1 iterations"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
    // A bound the model needs is enough.
    let s = summary("bound4", &["--newton-max-iter", "4", "--newton-tol", "1e-10"]);
    assert!(s["newton_iterations_max"].as_u64().unwrap() <= 4);
}

#[test]
fn compare_and_sweep_take_the_flags_too() {
    let dir = tmp("compare");
    let (code, out, err) = hamel(&[
        "compare",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "20",
        "--schemes",
        "hamel_averaged",
        "--no-plots",
        "--newton-max-iter",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_ne!(code, Some(0), "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("step 0: Newton did not converge in 1 iterations"),
        "{out}\n{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    std::fs::create_dir_all(&dir).unwrap();
    let members = dir.join("members.csv");
    std::fs::write(&members, "init,g\npublished,9.8\npublished,5\n").unwrap();
    let (code, out, err) = hamel(&[
        "sweep",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "20",
        "--members",
        members.to_str().unwrap(),
        "--newton-max-iter",
        "1",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(3), "every member fails: exit 3\n{out}\n{err}");
    assert!(out.contains("0 ok, 0 flagged, 2 failed"), "{out}");
    let csv = std::fs::read_to_string(dir.join("out").join("sweep.csv")).unwrap();
    assert!(csv.contains("Newton did not converge in 1 iterations"), "{csv}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_values_are_refused_with_the_flag_named() {
    let sp = "models/spherical_pendulum.hamel";
    let cases: [(&str, &str, &str); 7] = [
        (
            "--newton-tol",
            "0",
            "--newton-tol 0: the Newton tolerance must be a positive finite number",
        ),
        (
            "--newton-tol",
            "-0.5",
            "--newton-tol -0.5: the Newton tolerance must be",
        ),
        ("--newton-tol", "nan", "--newton-tol NaN: the Newton tolerance must be"),
        ("--newton-tol", "inf", "--newton-tol inf: the Newton tolerance must be"),
        (
            "--newton-max-iter",
            "0",
            "--newton-max-iter 0: the Newton iteration bound must be at least 1",
        ),
        (
            "--newton-max-iter",
            "-3",
            "--newton-max-iter -3: the Newton iteration bound must be at least 1",
        ),
        (
            "--newton-max-iter",
            "2.5",
            "invalid value '2.5' for '--newton-max-iter <N>'",
        ),
    ];
    let dir = tmp("bad");
    let d = dir.to_str().unwrap();
    for (cmd, extra) in [
        ("simulate", vec![]),
        ("compare", vec![]),
        ("sweep", vec!["--members", "none.csv"]),
    ] {
        for (flag, value, message) in cases {
            let mut args = vec![cmd, sp, "--h", "0.2", "--steps", "5", "--out", d, flag, value];
            args.extend_from_slice(&extra);
            let (code, out, err) = hamel(&args);
            assert_eq!(code, Some(2), "{cmd} {flag} {value}:\n{out}\n{err}");
            assert!(err.contains(message), "{cmd} {flag} {value}: {err}");
            assert!(!err.contains("panicked"), "{err}");
            // Refused before anything is written.
            assert!(!dir.exists(), "{cmd} {flag} {value} created {d}");
        }
    }
}
