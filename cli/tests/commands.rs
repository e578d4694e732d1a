//! The `hamel` commands end to end: outputs, summaries, and every error path
//! (message and non-zero exit).

mod common;
use common::{hamel, scratch, tmp};
use std::process::Command;

fn last_json(out: &str) -> serde_json::Value {
    serde_json::from_str(out.lines().last().expect("output")).expect("last line is JSON")
}

fn is_png(p: &std::path::Path) -> bool {
    std::fs::read(p)
        .map(|b| b.len() > 1000 && b.starts_with(b"\x89PNG"))
        .unwrap_or(false)
}

#[test]
fn simulate_reproduces_the_published_run_and_writes_csv_plots_and_json() {
    let dir = tmp("simulate");
    let d = dir.to_str().unwrap();
    let (code, out, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "2000",
        "--out",
        d,
        "--summary",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let s = last_json(&out);
    for key in [
        "model",
        "scheme",
        "steps",
        "h",
        "energy_min",
        "energy_max",
        "max_energy_error_rel",
        "max_constraint_error",
        "max_momentum_error_rel",
        "newton_iterations_mean",
        "ns_per_step",
    ] {
        assert!(!s[key].is_null(), "summary lacks `{key}`: {s}");
    }
    assert_eq!(s["model"], "spherical_pendulum");
    // No `--scheme`: the default, discrete Hamel with midpoint kinematics.
    assert_eq!(s["scheme"], "hamel_midpoint");
    assert_eq!(s["steps"], 2000);
    // the published run keeps energy, length and momentum to round-off (docs/schemes.md §2)
    assert!(s["max_energy_error_rel"].as_f64().unwrap() < 1e-13, "{s}");
    assert!(s["max_constraint_error"].as_f64().unwrap() < 1e-13, "{s}");
    assert!(s["max_momentum_error_rel"].as_f64().unwrap() < 1e-13, "{s}");
    assert!(s["energy_min"].as_f64().unwrap() <= s["energy_max"].as_f64().unwrap());
    let traj = std::fs::read_to_string(dir.join("trajectory.csv")).unwrap();
    assert_eq!(traj.lines().count(), 2002, "header + initial state + 2000 steps");
    assert!(traj.starts_with("step,t,gamma[0],gamma[1],gamma[2],xi[0],xi[1],xi[2]"));
    let diag = std::fs::read_to_string(dir.join("diagnostics.csv")).unwrap();
    assert!(diag.lines().next().unwrap().contains("energy_error_rel"));
    for p in ["energy", "constraint", "momentum", "trajectory"] {
        assert!(is_png(&dir.join(format!("{p}.png"))), "{p}.png");
        assert!(std::fs::read_to_string(dir.join(format!("{p}.svg")))
            .unwrap()
            .contains("<svg"));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn set_init_state_and_t_end_are_honoured() {
    let dir = tmp("options");
    let d = dir.to_str().unwrap();
    // a different length: the energy changes with r, the run still conserves it
    let (code, out, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.1",
        "--t-end",
        "10",
        "--set",
        "r=2",
        "--init",
        "over_equator",
        "--state",
        "xi=0.5,0.1,0",
        "--out",
        d,
        "--no-plots",
        "--summary",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let s = last_json(&out);
    assert_eq!(s["steps"], 100);
    assert_eq!(s["initial"], "over_equator (modified)");
    // E = ½ I (ξ₀² + ξ₁²) + m g r γ₂ with I = m r² = 4
    let gamma2 = {
        let traj = std::fs::read_to_string(dir.join("trajectory.csv")).unwrap();
        let row: Vec<f64> = traj
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        row[4]
    };
    let e0 = 0.5 * 4.0 * (0.25 + 0.01) + 9.8 * 2.0 * gamma2;
    assert!(
        (s["energy_initial"].as_f64().unwrap() - e0).abs() < 1e-12,
        "{s} vs {e0}"
    );
    assert!(s["max_energy_error_rel"].as_f64().unwrap() < 1e-13);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn compare_ranks_the_schemes_as_theory_says() {
    let dir = tmp("compare");
    let d = dir.to_str().unwrap();
    let (code, out, err) = hamel(&[
        "compare",
        "models/spherical_pendulum_cartesian.hamel",
        "--schemes",
        "rattle,energy_momentum",
        "--h",
        "0.2",
        "--steps",
        "1000",
        "--out",
        d,
        "--summary",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("rattle") && out.contains("energy_momentum"), "{out}");
    let s = last_json(&out);
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let e = |i: usize| runs[i]["max_energy_error_rel"].as_f64().unwrap();
    // RATTLE: bounded O(h²) energy error; energy–momentum: round-off
    assert!(e(0) > 1e-4 && e(1) < 1e-13, "{s}");
    for r in runs {
        assert!(r["max_constraint_error"].as_f64().unwrap() < 1e-12, "{s}");
    }
    assert!(is_png(&dir.join("energy.png")));
    assert!(dir.join("rattle").join("trajectory.csv").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn patterns_find_the_rate_of_the_exact_relative_equilibrium() {
    let dir = tmp("patterns");
    let d = dir.to_str().unwrap();
    let (code, out, err) = hamel(&[
        "patterns",
        "models/double_spherical_pendulum_cartesian.hamel",
        "--init",
        "relative_equilibrium",
        "--h",
        "0.001",
        "--t-end",
        "5",
        "--rates",
        "1.0",
        "--out",
        d,
        "--summary",
        "json",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let s = last_json(&out);
    // a relative equilibrium: the reduced motion does not oscillate, and the
    // configuration turns at Ω (docs/schemes.md §8) up to the O(h²) phase error
    assert!(s["reduced_period"].is_null(), "{s}");
    let omega = 1.5955061977691825;
    let rate = s["critical_rate"].as_f64().unwrap();
    assert!((rate - omega).abs() < 1e-6, "Ω_c = {rate}");
    for p in ["rotating_critical", "rotating_inertial", "rotating_rate1", "reduced_r"] {
        assert!(is_png(&dir.join(format!("{p}.png"))), "{p}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn patterns_agree_between_director_and_cartesian_models() {
    let run = |file: &str, name: &str| {
        let dir = tmp(name);
        let (code, out, err) = hamel(&[
            "patterns",
            file,
            "--init",
            "pattern_I",
            "--h",
            "0.01",
            "--t-end",
            "30",
            "--out",
            dir.to_str().unwrap(),
            "--no-plots",
            "--summary",
            "json",
        ]);
        assert_eq!(code, Some(0), "{out}\n{err}");
        let _ = std::fs::remove_dir_all(dir);
        last_json(&out)
    };
    let a = run("models/double_spherical_pendulum.hamel", "dir");
    let b = run("models/double_spherical_pendulum_cartesian.hamel", "cart");
    let (pa, pb) = (
        a["reduced_period"].as_f64().unwrap(),
        b["reduced_period"].as_f64().unwrap(),
    );
    let (ra, rb) = (
        a["critical_rate"].as_f64().unwrap(),
        b["critical_rate"].as_f64().unwrap(),
    );
    // same physical motion, different schemes and coordinates: O(h²) apart
    assert!((pa - pb).abs() < 1e-3 * pa, "{pa} vs {pb}");
    assert!((ra - rb).abs() < 1e-3 * ra, "{ra} vs {rb}");
    assert!(pa > 1.0 && pa < 10.0);
}

#[test]
fn report_writes_an_index_whose_images_exist() {
    let dir = tmp("report");
    let (code, out, err) = hamel(&["report", "--out", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let md = std::fs::read_to_string(dir.join("index.md")).unwrap();
    let imgs: Vec<&str> = html
        .split("<img src=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert!(imgs.len() >= 20, "{} images", imgs.len());
    // Section 7, the gallery: one row per check and scheme, every model named.
    assert!(md.contains("7. Gallery"), "no gallery section");
    for (name, _) in hamel_cli::gallery::MODELS {
        assert!(md.contains(&format!("`{name}`")), "the gallery section lacks {name}");
    }
    for i in &imgs {
        assert!(is_png(&dir.join(i)), "{i} is not a PNG");
        assert!(md.contains(i));
    }
    // the published figures are in the page
    assert!(html.contains("Spherical pendulum: the published run") && html.contains("Pattern"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_error_path_has_a_message_and_a_non_zero_exit() {
    let sp = "models/spherical_pendulum.hamel";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["simulate", "models/none.hamel", "--h", "0.1", "--steps", "1"],
            "cannot read model file `models/none.hamel`",
        ),
        (
            vec!["simulate", sp, "--h", "0.2", "--t-end", "-30"],
            "--t-end -30 with --h 0.2: an end time of -30 is not a number of steps of size 0.2",
        ),
        (
            vec![
                "simulate",
                "tests/ui/models/bad_names.hamel",
                "--h",
                "0.1",
                "--steps",
                "1",
            ],
            "--> tests/ui/models/bad_names.hamel:5:37",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--set", "zz=1"],
            "has no parameter `zz`",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--set", "m=abc"],
            "`abc` is not a valid value",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--set", "m=nan"],
            "parameter `m` = NaN is not finite",
        ),
        (
            vec!["simulate", sp, "--h", "0", "--steps", "1"],
            "--h 0: the step size must be a positive finite number (got 0)",
        ),
        (
            vec!["simulate", sp, "--h", "-0.1", "--steps", "1"],
            "--h -0.1: the step size must be a positive finite number (got -0.1)",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--scheme", "leapfrog"],
            "unknown scheme `leapfrog`",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--scheme", "rattle"],
            "rattle needs a model in generalized coordinates",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--init", "nowhere"],
            "has no initial state `nowhere`",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--state", "zeta=1,2"],
            "no coordinate or velocity `zeta`",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--state", "xi=1,2"],
            "has 3 component(s), 2 value(s) given",
        ),
        (
            vec!["simulate", sp, "--h", "0.1", "--steps", "1", "--state", "xi=0,0,1"],
            "the initial data are off the constraints: `xi[2]` = 1",
        ),
        (
            vec![
                "simulate",
                "models/double_spherical_pendulum_cartesian.hamel",
                "--scheme",
                "rattle",
                "--h",
                "2",
                "--steps",
                "10",
            ],
            "step 0: singular Newton matrix at iteration",
        ),
        (
            vec!["compare", sp, "--h", "0.1", "--steps", "1", "--schemes", "hamel,rattle"],
            "rattle needs",
        ),
        (
            vec![
                "patterns",
                "models/spherical_pendulum_angles.hamel",
                "--h",
                "0.1",
                "--steps",
                "10",
            ],
            "no bob positions",
        ),
        (
            vec!["patterns", sp, "--h", "0.1", "--steps", "10", "--points", "nope"],
            "`nope` is neither a vector `let` nor a vec3 coordinate",
        ),
        (vec!["simulate", sp, "--h", "0.1"], "--steps"),
    ];
    for (args, msg) in cases {
        let (code, out, err) = hamel(&args);
        assert!(matches!(code, Some(c) if c != 0), "{args:?} succeeded:\n{out}\n{err}");
        assert!(err.contains(msg), "{args:?}: expected `{msg}` in:\n{err}");
    }
}

#[test]
fn a_run_that_fails_midway_keeps_what_it_computed() {
    let dir = tmp("fail");
    // Started near the pole of the angle coordinates with a coarse step, the
    // run reaches the coordinate singularity after some good steps. (Where
    // it fails depends on round-off: at h = 0.7 some versions of Newton's
    // first guess carried the run through, with an energy warning.)
    let (code, out, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "1.0",
        "--steps",
        "1000",
        "--state",
        "th=0.05",
        "--out",
        dir.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    let good: usize = err
        .split("the run stopped after ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no partial-run line in:\n{err}"));
    assert!(good > 0 && good < 1000, "{err}");
    assert!(err.contains(&format!("error: step {good}:")), "{err}");
    let rows = std::fs::read_to_string(dir.join("trajectory.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, good + 2, "header + initial state + good steps");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn both_back_ends_give_the_same_summary_numbers_and_say_which_ran() {
    let mut summaries = Vec::new();
    for backend in ["jit", "interpreter"] {
        let dir = tmp(&format!("backend-{backend}"));
        let (code, out, err) = hamel(&[
            "simulate",
            "models/double_spherical_pendulum.hamel",
            "--init",
            "pattern_I",
            "--h",
            "0.01",
            "--steps",
            "300",
            "--no-plots",
            "--backend",
            backend,
            "--out",
            dir.to_str().unwrap(),
            "--summary",
            "json",
        ]);
        assert_eq!(code, Some(0), "{out}\n{err}");
        let s = last_json(&out);
        assert_eq!(s["backend"], backend);
        assert!(s["backend_prepare_ms"].as_f64().unwrap() >= 0.0);
        summaries.push(s);
    }
    for key in [
        "max_energy_error_rel",
        "max_constraint_error",
        "max_momentum_error_rel",
        "energy_min",
        "energy_max",
    ] {
        assert_eq!(summaries[0][key], summaries[1][key], "{key}");
    }
    let (code, _, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "2",
        "--backend",
        "gpu",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("gpu"), "{err}");
}

#[test]
fn a_closed_or_full_stdout_ends_the_command_without_a_panic() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // The reader takes one line and goes away, as `hamel check models/*.hamel | head -1` does.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hamel"))
        // The chains take a while to derive, so their lines come after the reader left.
        .args([
            "check",
            "models/spherical_chain.hamel",
            "models/spherical_chain.hamel",
            "models/spherical_chain.hamel",
            "--size",
            "N=6",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the hamel binary runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("spherical_chain"), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A full device is an error with a message, not a panic.
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
            .args(["check", "models/spherical_pendulum.hamel"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot write to standard output"), "{err}");
    }
}

#[test]
fn a_run_that_goes_non_finite_is_flagged_not_summarized_as_finite() {
    // V = 2 ln q pulls q through 0; past it ln q is NaN.
    let dir = tmp("nan-run");
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("lnq.hamel");
    std::fs::write(
        &model,
        "model lnq {\n  parameters { m = 1.0 }\n  coordinates { q }\n  lagrangian = 0.5 * m * q'^2 - 2 * ln(q)\n  initial start { q = 1.0, q' = -3.0 }\n}\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let (code, out, err) = hamel(&[
        "simulate",
        model.to_str().unwrap(),
        "--scheme",
        "stormer_verlet",
        "--h",
        "0.05",
        "--steps",
        "100",
        "--no-plots",
        "--out",
        out_dir.to_str().unwrap(),
        "--summary",
        "json",
    ]);
    assert_eq!(code, Some(3), "{out}\n{err}");
    assert!(err.contains("`energy` is not finite from step"), "{err}");
    let s = last_json(&out);
    assert_eq!(s["ok"], false);
    assert!(s["max_energy_error_rel"].is_null(), "{}", s["max_energy_error_rel"]);
    assert!(s["warnings"][0].as_str().unwrap().contains("not finite"));
    // The outputs were still written.
    assert!(out_dir.join("trajectory.csv").exists());
}

#[test]
fn model_files_must_be_regular_files() {
    for path in ["/dev/zero", "models"] {
        let (code, _, err) = hamel(&["check", path]);
        assert_eq!(code, Some(1), "{path}: {err}");
        assert!(err.contains("not a regular file"), "{path}: {err}");
    }
}

#[test]
fn output_never_overwrites_foreign_files_nor_writes_through_links() {
    let dir = tmp("foreign");
    std::fs::create_dir_all(&dir).unwrap();
    let mine = dir.join("trajectory.csv");
    std::fs::write(&mine, "my data\n").unwrap();
    let d = dir.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "models/spherical_pendulum.hamel",
            "--h",
            "0.2",
            "--steps",
            "10",
            "--no-plots",
            "--out",
            d,
        ];
        args.extend_from_slice(extra);
        hamel(&args)
    };
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("which hamel did not write") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my data\n");
    let (code, _, err) = run(&["--force"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(std::fs::read_to_string(&mine).unwrap().starts_with("step,t,"));
    // Now the folder is hamel's; a link planted in it is not followed.
    #[cfg(unix)]
    {
        let victim = tmp("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::remove_file(&mine).unwrap();
        std::os::unix::fs::symlink(&victim, &mine).unwrap();
        let (code, _, err) = run(&[]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    }
}

#[test]
fn sweep_runs_one_member_per_row_and_keeps_the_good_ones_when_one_fails() {
    let dir = tmp("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let members = dir.join("members.csv");
    // Row 2 breaks the constraint γ·ξ = 0 (ξ[2] along γ): that member fails alone.
    std::fs::write(
        &members,
        "# g and the initial spin\ninit,g,xi[0],xi[2]\npublished,9.8,0.6,\nover_equator,5,,\npublished,9.8,,3\n,1,0.1,\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let (code, out, err) = hamel(&[
        "sweep",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "500",
        "--members",
        members.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(3), "one member fails: exit 3\n{out}\n{err}");
    assert!(out.contains("3 ok, 0 flagged, 1 failed"), "{out}");
    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert_eq!(
        rows.iter().map(|r| r[1]).collect::<Vec<_>>(),
        ["true", "true", "false", "true"]
    );
    assert!(
        rows[2][7].contains("constraint"),
        "the failure names its cause: {}",
        rows[2][7]
    );
    // Member 0 is the published run: its energy error is the published figure's order.
    let e: f64 = rows[0][3].parse().unwrap();
    assert!(e > 0.0 && e < 1e-3, "{e}");
    // It agrees with `simulate` of the same case to the bit (final state).
    let sim = dir.join("sim");
    let (code, ..) = hamel(&[
        "simulate",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "500",
        "--no-plots",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    let traj = std::fs::read_to_string(sim.join("trajectory.csv")).unwrap();
    let last: Vec<&str> = traj.lines().last().unwrap().split(',').collect();
    let final_sweep: Vec<f64> = rows[0][8..].iter().map(|x| x.parse().unwrap()).collect();
    let final_sim: Vec<f64> = last[2..].iter().map(|x| x.parse().unwrap()).collect();
    assert_eq!(final_sweep, final_sim);
    // A row with the wrong number of cells is a located error.
    std::fs::write(&members, "g,xi[0]\n1\n").unwrap();
    let (code, _, err) = hamel(&[
        "sweep",
        "models/spherical_pendulum.hamel",
        "--h",
        "0.2",
        "--steps",
        "5",
        "--members",
        members.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("members.csv:2: 1 cell(s), the header has 2"), "{err}");
}

#[test]
fn compare_names_a_failing_scheme_and_keeps_the_others() {
    let dir = tmp("compare-fail");
    let (code, out, err) = hamel(&[
        "compare",
        "models/double_spherical_pendulum_cartesian.hamel",
        "--h",
        "0.5",
        "--steps",
        "200",
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("stormer_verlet: step 0: Newton did not converge"), "{err}");
    assert!(err.contains("rattle: step 0"), "{err}");
    let s = last_json(&out);
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let em = runs.iter().find(|r| r["scheme"] == "energy_momentum").unwrap();
    assert!(em["max_energy_error_rel"].as_f64().unwrap() < 1e-12, "{em}");
    assert!(
        runs.iter()
            .filter(|r| r["ok"] == false && r["error"].is_string())
            .count()
            == 2
    );
    assert!(dir.join("energy_momentum").join("trajectory.csv").is_file());
}

/// `patterns --summary json` of a W95 state of the director model.
fn pattern_summary(init: &str, t_end: &str) -> serde_json::Value {
    let dir = tmp(&format!("pattern-{init}-{t_end}"));
    let (code, out, err) = hamel(&[
        "patterns",
        "models/double_spherical_pendulum.hamel",
        "--init",
        init,
        "--h",
        "0.01",
        "--t-end",
        t_end,
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    last_json(&out)
}

#[test]
fn patterns_rate_is_robust_to_a_link_passing_the_axis_and_instability_is_named() {
    // Pattern II: link 1 passes within 0.3 % of the axis; the rotation is read
    // from the vector farthest from it, and the rate no longer wanders
    // (it read 1.19 / 1.11 / 1.15 rad/s over 30 / 100 / 300 s from link 1).
    let a = pattern_summary("pattern_II", "30");
    let b = pattern_summary("pattern_II", "100");
    assert_ne!(a["azimuth_of"], "link 1");
    assert!(a["axis_clearance"].as_f64().unwrap() > 0.1, "{a}");
    let (ra, rb) = (
        a["critical_rate"].as_f64().unwrap(),
        b["critical_rate"].as_f64().unwrap(),
    );
    assert!((ra - rb).abs() < 5e-3, "{ra} {rb}");
    for key in [
        "converged",
        "ill_conditioned",
        "unstable",
        "verdict",
        "perturbation_growth",
    ] {
        assert!(!b[key].is_null(), "{key} missing: {b}");
    }
    assert_eq!(b["unstable"], false);
    assert!(!b["divergence_rate"].is_null(), "{b}");
    // Pattern I is a pattern at the W95 rate, but not a lasting one: a
    // perturbation grows exponentially (measured: 49-fold over the second
    // half of 100 s, 1000-fold over that of 300 s; about 0.05–0.07 /s), and the
    // verdict, read from a rate, is the same at both lengths. (An absolute
    // growth threshold called it stable at 100 s and unstable at 300 s.)
    for t_end in ["100", "300"] {
        let d = pattern_summary("pattern_I", t_end);
        assert_eq!(d["unstable"], true, "{t_end} s: {d}");
        let rate = d["divergence_rate"].as_f64().unwrap();
        assert!(rate > 0.03 && rate < 0.15, "{t_end} s: rate {rate}");
        let verdict = d["verdict"].as_str().unwrap();
        assert!(verdict.starts_with("unstable") && verdict.contains("/s"), "{d}");
        // At the W95 rate while the pattern lasts (at 300 s the unstable
        // motion has wandered to 1.619).
        if t_end == "100" {
            assert!((d["critical_rate"].as_f64().unwrap() - 1.615).abs() < 2e-3, "{d}");
        }
        assert_eq!(
            d["vertical_symmetry"], true,
            "J is kept to O(h²) by the director Hamel step"
        );
    }
    // Pattern III is flagged at every length; Pattern II at none.
    for t_end in ["30", "100", "300"] {
        let c = pattern_summary("pattern_III", t_end);
        assert_eq!(c["unstable"], true, "{t_end} s: {c}");
        assert!(c["verdict"].as_str().unwrap().starts_with("unstable"), "{c}");
    }
    for t_end in ["30", "50"] {
        assert_eq!(pattern_summary("pattern_II", t_end)["unstable"], false, "{t_end} s");
    }
}

#[test]
fn patterns_see_an_exact_unstable_equilibrium_as_unstable() {
    // The upright pendulum at rest: scaling its velocities perturbs nothing,
    // so the twin is tilted instead, and the tilt grows as e^{t √(g/r)}.
    let dir = tmp("upright");
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read_to_string("../models/inverted_spherical_pendulum.hamel").unwrap();
    let with_j = src.replacen(
        "invariant   length",
        "invariant   J      = m * r^2 * dot(xi, gamma)\n    invariant   length",
        1,
    );
    let model = dir.join("upright.hamel");
    std::fs::write(&model, with_j).unwrap();
    let (code, out, err) = hamel(&[
        "patterns",
        model.to_str().unwrap(),
        "--init",
        "upright",
        "--points",
        "gamma",
        "--h",
        "0.01",
        "--t-end",
        "10",
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let s = last_json(&out);
    assert_eq!(s["unstable"], true, "{s}");
    // √(g/r) = 1 /s for this model.
    let rate = s["divergence_rate"].as_f64().unwrap();
    assert!((rate - 1.0).abs() < 0.1, "divergence rate {rate}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn patterns_refuse_what_they_cannot_analyse() {
    let sp = "models/double_spherical_pendulum.hamel";
    let base = [
        "patterns",
        sp,
        "--h",
        "0.01",
        "--no-plots",
        "--out",
        "/nonexistent/never-written",
    ];
    // Duplicate points once gave r₂ = 0 silently.
    let (code, _, err) = hamel(&[&base[..], &["--t-end", "1", "--points", "x1,x1"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`x1` is given twice"), "{err}");
    // No run printed Ω_c = 0.
    let (code, _, err) = hamel(&[&base[..], &["--steps", "0"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--steps 0"), "{err}");
    // A model that monitors no momentum: the symmetry cannot be checked.
    let (code, _, err) = hamel(&[
        "patterns",
        "models/inverted_spherical_pendulum.hamel",
        "--points",
        "gamma",
        "--h",
        "0.01",
        "--t-end",
        "1",
        "--no-plots",
        "--out",
        "/nonexistent/never-written",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("monitors no conserved momentum") && err.contains("invariant J"),
        "{err}"
    );
}

#[test]
fn patterns_warn_when_the_vertical_symmetry_is_broken() {
    let dir = tmp("tilted");
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read_to_string("../models/double_spherical_pendulum_cartesian.hamel").unwrap();
    let from = "- g * (m1 * q1[2] + m2 * q2[2])";
    assert!(src.contains(from));
    // A horizontal force on bob 1 breaks the symmetry about the vertical.
    let model = dir.join("tilted.hamel");
    std::fs::write(&model, src.replacen(from, &format!("{from} - 0.5 * q1[0]"), 1)).unwrap();
    let (code, out, err) = hamel(&[
        "patterns",
        model.to_str().unwrap(),
        "--scheme",
        "energy_momentum",
        "--h",
        "0.01",
        "--t-end",
        "30",
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    // The compiler finds that the free motion does not conserve J (it is
    // then not a momentum), so the analysis is refused before it is written.
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(err.contains("lacks the vertical symmetry"), "{err}");
    assert!(!dir.join("out").exists());
}

#[test]
fn absurd_run_lengths_are_refused_before_running() {
    let dir = tmp("absurd");
    let d = dir.to_str().unwrap();
    let m = "models/spherical_pendulum.hamel";
    let (code, _, err) = hamel(&["simulate", m, "--h", "1e-300", "--t-end", "1", "--out", d]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1.0e300 steps, more than any run can take"), "{err}");
    let (code, _, err) = hamel(&[
        "simulate",
        m,
        "--h",
        "0.1",
        "--steps",
        "100000000000",
        "--every",
        "1",
        "--out",
        d,
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("more than 4 GiB; record fewer"), "{err}");
    assert!(
        !dir.join("trajectory.csv").exists(),
        "nothing is written for a refused run"
    );
}

#[test]
fn plot_axes_can_be_chosen_and_bad_ones_are_named() {
    let dir = tmp("plot-axes");
    let d = dir.to_str().unwrap();
    let m = "models/chaplygin_sleigh.hamel";
    let (code, out, err) = hamel(&[
        "simulate",
        m,
        "--scheme",
        "hamel_midpoint",
        "--h",
        "0.05",
        "--steps",
        "400",
        "--plot",
        "x,y",
        "--out",
        d,
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(is_png(&dir.join("trajectory.png")));
    let (code, _, err) = hamel(&[
        "simulate", m, "--h", "0.05", "--steps", "10", "--plot", "x,nope", "--out", d, "--force",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no coordinate or velocity `nope` (components: x, y, th, u, w, om)"),
        "{err}"
    );
}

#[test]
fn a_model_the_default_scheme_cannot_run_gets_the_first_that_can() {
    // The spherical pendulum as a textbook writes it in Cartesian
    // coordinates: |x| = r is a holonomic constraint that `hamel` does not
    // impose. Without --scheme the run is RATTLE's, said so, and keeps what
    // RATTLE keeps exactly: the constraint and the vertical angular momentum.
    let dir = tmp("default-fallback");
    let out = dir.to_str().unwrap();
    let simulate = |model: &str, more: &[&str]| {
        let base = ["simulate", model, "--h", "0.05", "--out", out, "--no-plots", "--force"];
        hamel(&[&base[..], more].concat())
    };
    let cartesian = "models/spherical_pendulum_cartesian.hamel";
    let (code, stdout, stderr) = simulate(cartesian, &["--steps", "1000", "--summary", "json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("no --scheme given; running rattle"), "{stderr}");
    let s = last_json(&stdout);
    assert_eq!(s["scheme"], "rattle");
    assert!(s["max_constraint_error"].as_f64().unwrap() < 1e-12, "{s}");
    assert!(s["max_momentum_error_rel"].as_f64().unwrap() < 1e-12, "{s}");
    assert!(s["max_energy_error_rel"].as_f64().unwrap() < 1e-2, "{s}");
    // Named, the default is still refused, with its reason.
    let (code, _, stderr) = simulate(cartesian, &["--steps", "10", "--scheme", "hamel"]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("velocity constraints only"), "{stderr}");
    // A model hamel runs keeps it as its default, without a note.
    let (code, stdout, stderr) = simulate(
        "models/spherical_pendulum.hamel",
        &["--steps", "10", "--summary", "json"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("no --scheme given"), "{stderr}");
    assert_eq!(last_json(&stdout)["scheme"], "hamel_midpoint");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cartesian_pendulum_written_as_a_textbook_does_runs_by_default_with_its_exact_period() {
    // The plane pendulum in Cartesian coordinates with its rod as a
    // holonomic constraint (Goldstein §1.3), a model hamel does not ship.
    // Run without --scheme (RATTLE is chosen), released from rest at 1 rad:
    // its period is 4 √(l/g) K(sin ½θ₀), the complete elliptic integral of
    // the first kind (Goldstein §3; K by the arithmetic–geometric mean).
    let dir = scratch("cartesian-pendulum");
    let model = dir.join("pendulum.hamel");
    std::fs::write(
        &model,
        "model pendulum {\n\
         \x20   parameters { m = 1.0, l = 1.0, g = 9.81 }\n\
         \x20   coordinates { x, y }\n\
         \x20   lagrangian = 0.5 * m * (x'^2 + y'^2) - m * g * y\n\
         \x20   holonomic x^2 + y^2 = l^2\n\
         \x20   initial released { x = l * sin(1.0), y = -l * cos(1.0), x' = 0, y' = 0 }\n\
         }\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (code, _, stderr) = hamel(&[
        "simulate",
        model.to_str().unwrap(),
        "--h",
        "0.001",
        "--t-end",
        "10",
        "--every",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("running rattle"), "{stderr}");
    // Upward zero crossings of x, interpolated linearly.
    let traj = std::fs::read_to_string(out.join("trajectory.csv")).unwrap();
    let mut lines = traj.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (ti, xi) = (
        header.iter().position(|&c| c == "t").unwrap(),
        header.iter().position(|&c| c == "x").unwrap(),
    );
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|c| c.parse().unwrap()).collect();
            (v[ti], v[xi])
        })
        .collect();
    let crossings: Vec<f64> = rows
        .windows(2)
        .filter(|w| w[0].1 < 0.0 && w[1].1 >= 0.0)
        .map(|w| w[0].0 + (w[1].0 - w[0].0) * (-w[0].1) / (w[1].1 - w[0].1))
        .collect();
    assert!(crossings.len() >= 4, "{} crossings", crossings.len());
    let measured = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    let k = 0.5f64.sin();
    let (mut a, mut b) = (1.0f64, (1.0 - k * k).sqrt());
    // The mean converges quadratically: eight rounds are past round-off
    // (a test on |a − b| may never pass, the two differing in the last ulp).
    for _ in 0..8 {
        (a, b) = (0.5 * (a + b), (a * b).sqrt());
    }
    let exact = 4.0 * (1.0f64 / 9.81).sqrt() * std::f64::consts::PI / (2.0 * a);
    // RATTLE's phase error is O(h²) ≈ (ωh)²/24 ≈ 4e-7 here; linear
    // interpolation of the crossings adds O(h²) as well.
    assert!(
        (measured / exact - 1.0).abs() < 1e-5,
        "period {measured} against {exact}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
