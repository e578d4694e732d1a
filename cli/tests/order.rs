//! `--order 4|6` on `simulate` and `sweep`: the composed step runs (its
//! energy error far below the base step's at the same h, the label says so),
//! and bad orders are refused with the flag named, never a panic.

mod common;
use common::{hamel, tmp};

const DSP: &str = "models/double_spherical_pendulum.hamel";

fn simulate(name: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = tmp(name);
    let mut args = vec![
        "simulate",
        DSP,
        "--h",
        "0.02",
        "--steps",
        "100",
        "--no-plots",
        "--summary",
        "json",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = hamel(&args);
    let _ = std::fs::remove_dir_all(dir);
    r
}

#[test]
fn order_four_and_six_run_and_say_so() {
    let mut energy = vec![];
    for order in ["2", "4", "6"] {
        let (code, out, err) = simulate(&format!("o{order}"), &["--scheme", "hamel_midpoint", "--order", order]);
        assert_eq!(code, Some(0), "{out}\n{err}");
        let s: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        let label = s["scheme"].as_str().unwrap().to_string();
        if order == "2" {
            assert_eq!(label, "hamel_midpoint");
        } else {
            assert_eq!(label, format!("hamel_midpoint composed to order {order}"));
        }
        energy.push(s["max_energy_error_rel"].as_f64().unwrap());
    }
    assert!(energy[1] < energy[0] / 10.0 && energy[2] < energy[1], "{energy:?}");
}

#[test]
fn bad_orders_are_refused_naming_the_flag() {
    let (code, _, err) = simulate("o3", &["--order", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--order 3: order 3 is not offered"), "{err}");
    let (code, _, err) = simulate("em6", &["--order", "6", "--scheme", "energy_momentum"]);
    assert_ne!(code, Some(0));
    assert!(!err.contains("panicked"), "{err}");
    // The director model has no constant mass matrix: energy_momentum does
    // not apply; the Cartesian one is refused for order 6 by name.
    let dir = tmp("em6c");
    let (code, _, err) = hamel(&[
        "simulate",
        "models/double_spherical_pendulum_cartesian.hamel",
        "--scheme",
        "energy_momentum",
        "--order",
        "6",
        "--h",
        "0.01",
        "--steps",
        "10",
        "--no-plots",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--order 6: order 6 is not reached by energy_momentum"),
        "{err}"
    );
}
