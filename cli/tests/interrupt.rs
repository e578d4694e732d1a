//! Ctrl-C during `hamel simulate`: the run stops, its files hold the run so
//! far, the summary says it stopped, and the exit code is 130.
#![cfg(unix)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn ctrl_c_stops_a_run_and_keeps_what_it_computed() {
    let out = common::tmp("interrupt");
    let out_s = out.to_str().unwrap();
    // 10⁸ steps: minutes of work, far more than the test waits.
    let child = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args([
            "simulate",
            "models/spherical_pendulum.hamel",
            "--h",
            "0.001",
            "--steps",
            "100000000",
        ])
        .args(["--every", "100000", "--no-plots", "--summary", "json", "--out", out_s])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way (its first records are written).
    let started = Instant::now();
    while std::fs::read_to_string(out.join("trajectory.csv")).map_or(true, |t| t.lines().count() < 3) {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never got going");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let stopping = Instant::now();
    let done = child.wait_with_output().unwrap();
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        stopping.elapsed()
    );
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "stderr: {stderr}");
    assert!(stderr.contains("stopped by Ctrl-C after"), "{stderr}");
    let stdout = String::from_utf8_lossy(&done.stdout);
    let summary: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let steps = summary["steps"].as_u64().unwrap();
    assert_eq!(summary["stopped"], true);
    assert!(steps > 0 && steps < 100_000_000, "{steps}");
    // The trajectory ends at the step the summary names.
    let traj = std::fs::read_to_string(out.join("trajectory.csv")).unwrap();
    let last: u64 = traj.lines().last().unwrap().split(',').next().unwrap().parse().unwrap();
    assert_eq!(last, steps);
    let _ = std::fs::remove_dir_all(&out);
}
