//! The command line on the host API's guards (issue 29): an input table
//! that starts after the run, an input "file" that is a FIFO or a device,
//! duplicate member columns and absurd thread counts are refused at once
//! with the file, line or flag named.

mod common;
use common::{hamel, scratch};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const TORQUE: &str = "models/torque_driven_spherical_pendulum.hamel";

fn simulate_with_inputs(inputs: &str, out: &str) -> (Option<i32>, String, String) {
    hamel(&[
        "simulate",
        TORQUE,
        "--scheme",
        "hamel_midpoint",
        "--h",
        "0.1",
        "--steps",
        "10",
        "--inputs",
        inputs,
        "--out",
        out,
        "--no-plots",
    ])
}

#[test]
fn input_tables_that_start_late_or_are_no_files_are_refused() {
    let dir = scratch("inputs");
    let out = dir.join("out");
    let late = dir.join("late.csv");
    std::fs::write(&late, "t,tau\n5,1\n6,2\n").unwrap();
    let (code, _, err) = simulate_with_inputs(late.to_str().unwrap(), out.to_str().unwrap());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("late.csv:2: the first row is at t = 5, after the run's start t = 0"),
        "{err}"
    );
    // A FIFO would block and /dev/zero never ends: both refused before reading.
    let fifo = dir.join("fifo.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().map(|s| s.success());
    let mut specials = vec![PathBuf::from("/dev/zero")];
    if made.is_ok_and(|ok| ok) {
        specials.push(fifo);
    }
    for f in specials {
        let started = Instant::now();
        let (code, _, err) = simulate_with_inputs(f.to_str().unwrap(), out.to_str().unwrap());
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not a regular file"), "{}: {err}", f.display());
        assert!(started.elapsed() < Duration::from_secs(20));
    }
    // A table from t = 0 runs.
    let good = dir.join("good.csv");
    std::fs::write(&good, "t,tau\n0,1\n0.5,2\n").unwrap();
    let (code, _, err) = simulate_with_inputs(good.to_str().unwrap(), out.to_str().unwrap());
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn duplicate_member_columns_and_absurd_thread_counts_are_refused() {
    let dir = scratch("members");
    let members = dir.join("members.csv");
    std::fs::write(&members, "g,g\n9,10\n").unwrap();
    let sweep = |threads: Option<&str>| {
        let mut args = vec![
            "sweep",
            "models/spherical_pendulum.hamel",
            "--h",
            "0.2",
            "--steps",
            "5",
            "--members",
            members.to_str().unwrap(),
        ];
        let out = dir.join("out");
        args.extend(["--out", out.to_str().unwrap()]);
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let started = Instant::now();
        let r = hamel(&args);
        (r, started.elapsed())
    };
    let ((code, _, err), _) = sweep(None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("members.csv:1: column `g` appears twice (columns 1 and 2)"),
        "{err}"
    );
    let ((code, _, err), took) = sweep(Some("1000000"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--threads 1000000 threads: give 1 to"), "{err}");
    assert!(
        took < Duration::from_secs(5),
        "refused at once, not after starting threads: {took:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
