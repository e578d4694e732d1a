//! The README's speed tables, rendered from the speed example's results
//! (`bench/speed/results.json`): written by `cargo run --release --example
//! speed -- --write`, checked against the README by `tests/readme_speed.rs`,
//! so that no figure in them is typed by hand.

use serde_json::Value;

/// Where the rendered tables sit in README.md.
pub const BEGIN: &str = "<!-- speed:begin (rendered from bench/speed/results.json; do not edit) -->";
/// (see [`BEGIN`])
pub const END: &str = "<!-- speed:end -->";

/// Every scheme timed on a chain, in the tables' column order, with the key
/// of its step times in the results' `chain` object (the averaged step's is
/// `hamel_ns`, from before there were others); its iterations are keyed by
/// its name.
pub const CHAIN_SCHEMES: [(&str, &str); 5] = [
    ("hamel_averaged", "hamel_ns"),
    ("hamel_midpoint", "hamel_midpoint_ns"),
    ("rattle", "rattle_ns"),
    ("stormer_verlet", "stormer_verlet_ns"),
    ("energy_momentum", "energy_momentum_ns"),
];

/// Exponent `p` of the least-squares fit `t ≈ c N^p` (log–log) to the
/// points `(N, t)`; `None` from fewer than two.
pub fn fitted_exponent(points: &[(usize, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (xs, ys): (Vec<f64>, Vec<f64>) = points.iter().map(|&(s, t)| ((s as f64).ln(), t.ln())).unzip();
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    Some(sxy / sxx)
}

fn ns(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{x:.0}"))
}

fn us(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{:.1}", x / 1000.0))
}

fn ratio(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{x:.2}"))
}

/// The tables, between [`BEGIN`] and [`END`] (both included).
pub fn render(r: &Value) -> String {
    let mut out = format!("{BEGIN}\n\n");
    let meta = &r["meta"];
    out += &format!(
        "Run of {} on {} (`cargo run --release --example speed -- --write`), ns per step, medians of interleaved rounds:\n\n",
        meta["date"].as_str().unwrap_or("?"),
        meta["machine"].as_str().unwrap_or("?")
    );
    let s = &r["sphere"];
    out += "| step | derived | JIT | JIT / derived |\n|---|---|---|---|\n";
    out += &format!(
        "| sphere, averaged Hamel (hand-written yardstick {} ns: derived / hand-written {}) | {} | {} | {} |\n",
        ns(&s["hand_written_ns"]),
        ratio(&Value::from(
            s["generated_ns"].as_f64().unwrap_or(f64::NAN) / s["hand_written_ns"].as_f64().unwrap_or(f64::NAN)
        )),
        ns(&s["generated_ns"]),
        ns(&s["jit_ns"]),
        ratio(&s["jit_over_derived"])
    );
    let d = &r["dsp"];
    for (key, name) in [
        ("hamel", "averaged Hamel (directors)"),
        ("hamel_midpoint", "midpoint Hamel (directors)"),
        ("rattle", "RATTLE (Cartesian)"),
        ("energy_momentum", "energy–momentum (Cartesian)"),
        ("stormer_verlet", "Störmer–Verlet (Cartesian)"),
    ] {
        out += &format!(
            "| double pendulum, {name} | {} | {} | {} |\n",
            ns(&d[format!("{key}_ns")]),
            ns(&d["jit"][format!("{key}_ns")]),
            ratio(&d["jit_over_derived"][key])
        );
    }
    let c = &r["chain"];
    // The motion and the steps a round times, as the run recorded them
    // (results before they were recorded: `tilted`, 4000 / N).
    let initial = c["initial"].as_str().unwrap_or("tilted");
    let timed = c["timed_steps"]
        .as_u64()
        .map_or("4000/N steps".to_string(), |t| format!("{t} steps"));
    // Since 2026-11-29 every size is timed in the same rounds.
    let together = if c["sizes_interleaved"].as_bool() == Some(true) {
        ", every size and scheme in each round"
    } else {
        ""
    };
    out +=
        &format!("\nSpherical chains (JIT, h = 0.01, from `{initial}`, {timed} a round{together}), µs per step:\n\n");
    out += "| N | averaged Hamel | midpoint Hamel | RATTLE | Störmer–Verlet | energy–momentum |\n|---|---|---|---|---|---|\n";
    let sizes = c["sizes"].as_array().cloned().unwrap_or_default();
    for (k, n) in sizes.iter().enumerate() {
        out += &format!("| {} |", n.as_u64().unwrap_or(0));
        for (_, key) in CHAIN_SCHEMES {
            out += &format!(" {} |", us(&c[key][k]));
        }
        out += "\n";
    }
    let e = &c["exponent_16_128"];
    // The averaged step is timed up to the largest size it runs at (see
    // `SPEED_CHAIN_MAX` in examples/speed.rs): its exponent says over what.
    let averaged_to = sizes
        .iter()
        .zip(c["hamel_ns"].as_array().cloned().unwrap_or_default())
        .filter(|(_, t)| t.as_f64().is_some())
        .filter_map(|(n, _)| n.as_u64())
        .max();
    let averaged = match averaged_to {
        Some(n) if n < 128 && e["hamel_averaged"].is_f64() => format!("{} (16 … {n})", ratio(&e["hamel_averaged"])),
        _ => ratio(&e["hamel_averaged"]),
    };
    out += &format!(
        "| exponent of step time in N, 16 … 128 | {averaged} | {} | {} | {} | {} |\n",
        ratio(&e["hamel_midpoint"]),
        ratio(&e["rattle"]),
        ratio(&e["stormer_verlet"]),
        ratio(&e["energy_momentum"])
    );
    // Runs that stop soon after their timed steps: their times are of a
    // motion the step size resolves no further.
    let (good, checked) = (&c["good_steps"], &c["checked_steps"]);
    if good.is_object() {
        let labels = [
            "averaged Hamel",
            "midpoint Hamel",
            "RATTLE",
            "Störmer–Verlet",
            "energy–momentum",
        ];
        let mut stops = Vec::new();
        for ((scheme, _), label) in CHAIN_SCHEMES.iter().zip(labels) {
            for (k, n) in sizes.iter().enumerate() {
                if let (Some(g), Some(h)) = (good[scheme][k].as_u64(), checked[k].as_u64()) {
                    if g < h {
                        stops.push(format!("{label} at N = {} (step {g} of {h})", n.as_u64().unwrap_or(0)));
                    }
                }
            }
        }
        // Every size was checked over the same steps where the run says so.
        let horizon = checked.as_array().and_then(|h| {
            let first = h.iter().find_map(|x| x.as_u64())?;
            h.iter().filter_map(|x| x.as_u64()).all(|x| x == first).then_some(first)
        });
        let over = match horizon {
            Some(h) => format!("over {h} steps"),
            None => "over their timed steps and to 1 s at least".to_string(),
        };
        out += &if stops.is_empty() {
            format!("\nEvery run timed goes on from `{initial}`, with a fresh stepper, {over}.\n")
        } else {
            format!(
                "\nRuns that stop when taken on from `{initial}`, with a fresh stepper, {over}: {}. Their times are of the steps before, and the exponents include them.\n",
                stops.join(", ")
            )
        };
    }
    // Where the step's time comes from besides N: Newton's iterations.
    let its = &c["iterations_per_step"];
    if its.is_object() {
        // With the factorizations where the run recorded them (each takes
        // a Jacobian and an LU, an iteration without one a residual).
        let facs = &c["factorizations_per_step"];
        let what = if facs.is_object() {
            "Newton iterations / factorizations"
        } else {
            "Newton iterations"
        };
        out += &format!("\n{what} per step in the same runs (a longer chain is stiffer, its top link carrying the weight of all N: at a fixed h Newton needs more of them; the time per iteration is what grows with N alone):\n\n");
        out += "| N | averaged Hamel | midpoint Hamel | RATTLE | Störmer–Verlet | energy–momentum |\n|---|---|---|---|---|---|\n";
        for (k, n) in sizes.iter().enumerate() {
            out += &format!("| {} |", n.as_u64().unwrap_or(0));
            for (scheme, _) in CHAIN_SCHEMES {
                out += &match facs[scheme][k].as_f64() {
                    Some(_) => format!(" {} / {} |", ratio(&its[scheme][k]), ratio(&facs[scheme][k])),
                    None => format!(" {} |", ratio(&its[scheme][k])),
                };
            }
            out += "\n";
        }
        // The step's arithmetic alone: time per iteration against N.
        out += "| exponent of time per iteration in N, 16 … 128 |";
        for (scheme, times) in CHAIN_SCHEMES {
            let points: Vec<(usize, f64)> = sizes
                .iter()
                .enumerate()
                .filter_map(|(k, n)| {
                    let n = n.as_u64()? as usize;
                    let t = c[times][k].as_f64()? / its[scheme][k].as_f64()?;
                    (n >= 16).then_some((n, t))
                })
                .collect();
            out += &format!(
                " {} |",
                fitted_exponent(&points).map_or("–".into(), |p| format!("{p:.2}"))
            );
        }
        out += "\n";
    }
    out += &format!("\n{END}");
    out
}

/// The section of `readme` between [`BEGIN`] and [`END`] (both included).
pub fn section(readme: &str) -> Option<&str> {
    let a = readme.find(BEGIN)?;
    let b = readme[a..].find(END)? + a + END.len();
    Some(&readme[a..b])
}
