//! The hostile-input campaign's findings (issue 29, second pass): each test
//! here failed before its fix. Model files are written into a scratch folder.

mod common;
use common::{hamel, scratch};

const TORQUE: &str = "models/torque_driven_spherical_pendulum.hamel";

fn pendulum(extra_l: &str, initial: &str) -> String {
    format!(
        "model pend {{\n    parameters {{ m = 1.0, l = 1.0, g = 9.81 }}\n    coordinates {{ th }}\n    lagrangian = 0.5 * m * l^2 * th'^2 + m * g * l * cos(th){extra_l}\n    initial released {{ {initial} }}\n}}\n"
    )
}

#[test]
fn a_lagrangian_of_14000_terms_checks_and_runs() {
    let dir = scratch("long");
    let f = dir.join("long.hamel");
    std::fs::write(&f, pendulum(&" + 0*th".repeat(14_000), "th = 0.3, th' = 0")).unwrap();
    let f = f.to_str().unwrap();
    let (code, out, err) = hamel(&["check", f]);
    assert_eq!(code, Some(0), "{out}{err}");
    let o = dir.join("o");
    let (code, _, err) = hamel(&[
        "simulate",
        f,
        "--h",
        "0.01",
        "--steps",
        "10",
        "--no-plots",
        "--out",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    // what still nests is refused with its place, not a crash
    let deep = dir.join("deep.hamel");
    std::fs::write(
        &deep,
        pendulum(&format!(" + th{}", "^th".repeat(14_000)), "th = 0.3, th' = 0"),
    )
    .unwrap();
    let (code, _, err) = hamel(&["check", deep.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("expression nested 257 deep, more than the limit 256; split it with `let`"),
        "{err}"
    );
    assert!(err.contains("deep.hamel:4:"), "{err}");
}

fn sweep(dir: &std::path::Path, extra: &[&str], out: &str) -> (Option<i32>, String, String) {
    let members = dir.join("members.csv");
    std::fs::write(&members, "g\n9.81\n1\n").unwrap();
    let o = dir.join(out);
    let mut args = vec![
        "sweep",
        TORQUE,
        "--h",
        "0.05",
        "--steps",
        "40",
        "--members",
        members.to_str().unwrap(),
        "--out",
        o.to_str().unwrap(),
        "--force",
    ];
    args.extend_from_slice(extra);
    hamel(&args)
}

#[test]
fn sweep_applies_its_inputs_and_refuses_bad_ones() {
    let dir = scratch("sweep-inputs");
    let read = |out: &str| std::fs::read_to_string(dir.join(out).join("sweep.csv")).unwrap();
    let (code, _, err) = sweep(&dir, &[], "none");
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = sweep(&dir, &["--input", "tau=50"], "input");
    assert_eq!(code, Some(0), "{err}");
    assert_ne!(
        read("none"),
        read("input"),
        "--input tau=50 changes the members' final states"
    );
    let table = dir.join("tau.csv");
    std::fs::write(&table, "t,tau\n0,50\n").unwrap();
    let (code, _, err) = sweep(&dir, &["--inputs", table.to_str().unwrap()], "table");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(read("input"), read("table"), "a constant table is the constant input");
    // refused as `simulate` refuses them
    let late = dir.join("late.csv");
    std::fs::write(&late, "t,tau\n5,1\n6,2\n").unwrap();
    let (code, _, err) = sweep(&dir, &["--inputs", late.to_str().unwrap()], "late");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("late.csv:2: the first row is at t = 5"), "{err}");
    let (code, _, err) = sweep(&dir, &["--input", "tau=sin("], "bad");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "--input `tau=sin(`: syntax error: expected an expression, found the end of the expression (at column 5)"
        ),
        "{err}"
    );
    assert!(!err.contains('}'), "no phantom brace: {err}");
}

fn simulate(args: &[&str]) -> (Option<i32>, String, String) {
    // A folder of its own per call: tests run at once, and calls with
    // equally many arguments must not write into one folder.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let o = common::tmp(&format!(
        "sim-{}",
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-plots", "--out", o.to_str().unwrap(), "--force"]);
    hamel(&all)
}

#[test]
fn a_name_given_twice_to_a_repeatable_flag_is_refused() {
    let chain = "models/spherical_chain.hamel";
    let angles = "models/spherical_pendulum_angles.hamel";
    for (args, want) in [
        (
            vec![chain, "--h", "0.01", "--steps", "2", "--size", "N=3", "--size", "N=4"],
            "--size gives `N` twice (--size N=3 and --size N=4); give each name once",
        ),
        (
            vec![angles, "--h", "0.1", "--steps", "2", "--set", "m=1", "--set", "m=2"],
            "--set gives `m` twice (--set m=1 and --set m=2)",
        ),
        (
            vec![
                angles, "--h", "0.1", "--steps", "2", "--state", "th=0.3", "--state", "th=0.4",
            ],
            "--state gives `th` twice (--state th=0.3 and --state th=0.4)",
        ),
    ] {
        let (code, _, err) = simulate(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn zero_over_zero_and_twice_given_values_are_refused() {
    let dir = scratch("nan");
    let nan = dir.join("nan.hamel");
    std::fs::write(&nan, pendulum("", "th = 0/0, th' = 0")).unwrap();
    let (code, _, err) = hamel(&["check", nan.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("gives th = NaN"), "{err}");
    let dup = dir.join("dup.hamel");
    std::fs::write(&dup, pendulum("", "th = 2.0, th = 1.0, th' = 0")).unwrap();
    let (code, _, err) = hamel(&["check", dup.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("`th` is given twice in initial state `released` (first at line 5, column 24)"),
        "{err}"
    );
    assert!(err.contains("dup.hamel:5:34"), "{err}");
    // ... and in an input
    let (code, _, err) = simulate(&[TORQUE, "--h", "0.05", "--steps", "10", "--input", "tau=0/0"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("input `tau` is NaN at t = 0"), "{err}");
}

#[test]
fn messages_name_what_is_wrong() {
    let dir = scratch("messages");
    // a model-file error is printed once with `error: `, not `error: error: `
    let (code, _, err) = simulate(&[
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "0.1",
        "--steps",
        "2",
        "--size",
        "N=3",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: model `spherical_pendulum_angles` has no size `N`"),
        "{err}"
    );
    // input expressions speak of the expression, not of a model file
    let (code, _, err) = simulate(&[TORQUE, "--h", "0.05", "--steps", "10", "--input", "tau=1,2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("found `,2` (at column 2)") && !err.contains("an item"),
        "{err}"
    );
    // a semicolon-separated table is named as such
    let semi = dir.join("semi.csv");
    std::fs::write(&semi, "t;tau\n0;1\n").unwrap();
    let (code, _, err) = simulate(&[
        TORQUE,
        "--h",
        "0.05",
        "--steps",
        "10",
        "--inputs",
        semi.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("semi.csv:1: the header `t;tau` is one column holding semicolons"),
        "{err}"
    );
    // a NUL byte is shown escaped
    let nul = dir.join("nul.hamel");
    std::fs::write(&nul, pendulum(" \0", "th = 0.3, th' = 0")).unwrap();
    let (code, _, err) = hamel(&["check", nul.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("found `\\0`"), "{err}");
    // extreme step sizes are printed as 1e-300, not in 300 digits
    let (_, out, err) = simulate(&[
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "1e-300",
        "--steps",
        "2",
    ]);
    assert!(out.contains("h = 1e-300,"), "{out}{err}");
    let (code, _, err) = simulate(&[
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "0.1",
        "--t-end",
        "1e300",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--t-end 1e300 with --h 0.1"), "{err}");
}

#[test]
fn a_bad_plot_name_is_refused_before_the_run() {
    let o = common::tmp("plot");
    let started = std::time::Instant::now();
    let (code, _, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "0.001",
        "--steps",
        "100000000",
        "--plot",
        "zz,th",
        "--out",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--plot: model `spherical_pendulum_angles` has no coordinate or velocity `zz`"),
        "{err}"
    );
    assert!(
        started.elapsed().as_secs_f64() < 20.0,
        "refused before the 1e8-step run"
    );
    assert!(!o.exists(), "nothing written");
}

#[test]
fn a_forced_run_plots_its_energy_change_and_its_energy_balance() {
    let dir = scratch("forced-plot");
    let m = dir.join("antidamped.hamel");
    std::fs::write(
        &m,
        "model antidamped {\n parameters { m = 1.0, k = 1.0, c = -0.2 }\n coordinates { x }\n lagrangian = 0.5 * m * x'^2 - 0.5 * k * x^2\n dissipation = 0.5 * c * x'^2\n initial kicked { x = 1, x' = 0 }\n}\n",
    )
    .unwrap();
    let o = dir.join("o");
    let (code, _, err) = hamel(&[
        "simulate",
        m.to_str().unwrap(),
        "--h",
        "0.01",
        "--steps",
        "500",
        "--out",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let svg = std::fs::read_to_string(o.join("energy.svg")).unwrap();
    assert!(
        svg.contains("energy balance error (judged)"),
        "the judged balance is drawn"
    );
    assert!(
        svg.contains("Energy change and energy balance error"),
        "titled for what it draws"
    );
    assert!(!svg.contains("Relative energy error"));
}

#[test]
fn a_folder_of_unrelated_files_is_refused_as_the_readme_says() {
    let dir = scratch("otherfiles");
    std::fs::write(dir.join("precious.txt"), "mine").unwrap();
    let d = dir.to_str().unwrap();
    for args in [
        vec![
            "simulate",
            "models/spherical_pendulum_angles.hamel",
            "--h",
            "0.1",
            "--steps",
            "2",
            "--no-plots",
            "--out",
            d,
        ],
        vec!["report", "--out", d],
    ] {
        let (code, _, err) = hamel(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("holds `precious.txt`, which hamel did not write"), "{err}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "nothing written");
    // --force writes beside it, keeping it
    let (code, _, err) = hamel(&[
        "simulate",
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "0.1",
        "--steps",
        "2",
        "--no-plots",
        "--out",
        d,
        "--force",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("precious.txt")).unwrap(), "mine");
}

#[test]
fn compare_shows_a_forced_model_s_energy_balance_error() {
    let o = common::tmp("cmp-forced");
    let (code, out, err) = hamel(&[
        "compare",
        TORQUE,
        "--h",
        "0.05",
        "--steps",
        "100",
        "--input",
        "tau=1",
        "--schemes",
        "hamel_midpoint",
        "--no-plots",
        "--out",
        o.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("the energy column is the energy balance error"), "{out}");
    assert!(out.contains("max|Δbal|") && !out.contains("max|ΔE/E|"), "{out}");
    // the input's work (about 8e-2 of the energy) is not in the column
    let row = out.lines().find(|l| l.starts_with("hamel_midpoint")).unwrap();
    let col: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(col < 1e-10, "{row}");
}

#[test]
fn a_step_that_overflows_names_the_step_size_or_the_parameter() {
    let (code, _, err) = simulate(&[
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "1e300",
        "--steps",
        "10",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the step size h = 1e300 is so large"), "{err}");
    let (code, _, err) = simulate(&[
        "models/spherical_pendulum_angles.hamel",
        "--h",
        "0.1",
        "--steps",
        "10",
        "--set",
        "g=1e300",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("parameter(s) g = 1e300 are beyond"), "{err}");
    let (code, _, err) = simulate(&[TORQUE, "--h", "0.05", "--steps", "10", "--input", "tau=1e308"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("input `tau` = 1e308 at t = 0 is so large"), "{err}");
}

#[test]
fn a_force_not_finite_at_the_initial_state_is_named() {
    let dir = scratch("force-nan");
    let m = dir.join("f.hamel");
    std::fs::write(
        &m,
        "model pend {\n parameters { m = 1.0, g = 9.81 }\n inputs { u }\n coordinates { th }\n lagrangian = 0.5 * m * th'^2 + m * g * cos(th)\n force th = u / th\n initial released { th = 0, th' = 0 }\n}\n",
    )
    .unwrap();
    let (code, _, err) = simulate(&[m.to_str().unwrap(), "--h", "0.01", "--steps", "10"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("note: the force on `th'` is NaN at the initial state (th = 0, th' = 0)"),
        "{err}"
    );
}

#[test]
fn a_subnormal_parameter_is_refused_by_name_in_the_file_and_in_set() {
    // m = 1e-320: the metric's inverse overflows; the run used to fail with
    // "non-finite physical state", naming nothing.
    let dir = scratch("subnormal");
    let f = dir.join("tiny.hamel");
    std::fs::write(
        &f,
        pendulum("", "th = 1.0, th' = 0").replacen("m = 1.0", "m = 1e-320", 1),
    )
    .unwrap();
    let (code, _, err) = hamel(&["check", f.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("parameter `m` = 1e-320 is subnormal"), "{err}");
    assert!(err.contains("tiny.hamel:2:22"), "{err}");
    assert!(!err.contains("unknown name"), "one error, not one per use: {err}");
    // --set: refused before the run, naming the argument's parameter; a
    // subnormal g (which ran, as g = 0 to every digit) is refused the same way.
    for set in ["m=1e-320", "g=-4e-310"] {
        let (code, _, err) = simulate(&[
            "models/gallery/planar_pendulum.hamel",
            "--h",
            "0.01",
            "--steps",
            "10",
            "--set",
            set,
        ]);
        assert_eq!(code, Some(2), "{set}: {err}");
        let name = &set[..1];
        assert!(
            err.contains(&format!("parameter `{name}` = ")) && err.contains("is subnormal"),
            "{err}"
        );
        assert!(!err.contains("non-finite"), "{err}");
    }
}
