//! `hamel patterns`: reduced coordinates, reduced period, critical rate, rotating views.

use hamel_cli::case::pairs;
use hamel_cli::{load_model, parse_scheme, Error};

use super::case::{headline, out_dir, run_case_with};
use crate::CaseArgs;

pub fn patterns_cmd(case: &CaseArgs, scheme: Option<&str>, rates: &[f64], points: &[String]) -> Result<(), Error> {
    use hamel_cli::patterns;
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let model = load_model(&case.model, &sizes)?;
    let scheme = match scheme {
        Some(s) => parse_scheme(s, None)?,
        None => ["energy_momentum", "hamel", "rattle", "hamel_midpoint", "stormer_verlet"]
            .iter()
            .map(|n| parse_scheme(n, None).expect("known scheme"))
            .find(|s| s.derive(&model).is_ok())
            .ok_or_else(|| Error::Scheme(format!("no scheme applies to {}", case.model.display())))?,
    };
    if let Some(bad) = rates.iter().find(|r| !r.is_finite()) {
        return Err(Error::Usage(format!("--rates: {bad} is not a finite rate")));
    }
    // The azimuth is unwrapped record by record: keep every step unless asked otherwise.
    let every = if case.every > 0 { case.every } else { 1 };
    let (run, sys) = run_case_with(case, scheme, every)?;
    let pts = patterns::points(sys.compiled(), points)?;
    let pos = patterns::positions(&sys, &run, &pts);
    let t: Vec<f64> = (0..run.steps.len()).map(|k| run.time(k)).collect();
    let mut a = patterns::analyse(&t, &pos);
    a.growth = Some(patterns::twin_growth(&sys, &run, &pts, &pos)?);
    let dir = out_dir(case, &run.model, "patterns")?;
    hamel_cli::simulate::write_csv(&run, &dir)?;
    let names: Vec<&str> = pts.iter().map(|(n, _)| n.as_str()).collect();
    let resonant: Vec<serde_json::Value> = match a.reduced_period {
        Some(p) => [(1i32, 1i32), (-1, 1), (1, 2), (-1, 2), (1, 3), (-1, 3)]
            .iter()
            .map(|&(k, n)| {
                serde_json::json!({"k": k, "n": n, "rate": a.critical_rate + 2.0 * std::f64::consts::PI * k as f64 / (n as f64 * p)})
            })
            .collect(),
        None => Vec::new(),
    };
    if !case.no_plots {
        hamel_cli::patterns::write_plots(&dir, &run, &a, &pos, &names, rates)?;
    }
    // reduced coordinates as CSV
    let mut csv = String::from("t,azimuth");
    for (n, _) in &a.reduced {
        csv.push(',');
        csv.push_str(n);
    }
    csv.push('\n');
    for k in 0..t.len() {
        csv.push_str(&format!("{:e},{:e}", t[k], a.azimuth[k]));
        for (_, v) in &a.reduced {
            csv.push_str(&format!(",{:e}", v[k]));
        }
        csv.push('\n');
    }
    hamel_cli::output::write(&dir.join("reduced.csv"), csv)?;
    // The analysis assumes a symmetry about the vertical: its momentum must
    // be monitored (an invariant named `J…`) and conserved.
    // A quantity named `J…` that the compiler found not conserved by the
    // free motion (kind `monitored`, not `momentum`) says the same: the
    // model lacks the symmetry.
    let momentum = run
        .momentum_indices()
        .into_iter()
        .chain((0..run.invariants.len()).filter(|&i| {
            let (name, kind) = &run.invariants[i];
            name.starts_with('J') && *kind == hamel_runtime::InvariantKind::Monitored
        }))
        .map(|i| run.monitor.reports()[i].max_rel_error)
        .reduce(f64::max);
    // 1e-3: schemes that keep it only to O(h²) (the director Hamel chain)
    // stay near 1e-5; a horizontal force changes it by O(1).
    let symmetric = momentum.map(|e| e <= 1e-3);
    let summary = serde_json::json!({
        "model": run.model,
        "file": case.model.display().to_string(),
        "scheme": run.scheme,
        "initial": run.initial,
        "h": run.options.h,
        "steps": run.options.steps,
        "points": names,
        "reduced_period": a.reduced_period,
        "critical_rate": a.critical_rate,
        "periods_averaged": a.periods_averaged,
        "critical_rate_halves": a.rate_halves.map(|(x, y)| vec![x, y]),
        "axis_clearance": a.axis_clearance,
        "azimuth_of": a.azimuth_of,
        "vertical_symmetry": symmetric,
        "converged": a.converged(),
        "ill_conditioned": a.ill_conditioned(),
        "unstable": a.unstable(),
        "perturbation_growth": a.growth,
        "verdict": if a.unstable() {
            "unstable: a tiny perturbation grows by more than 1e4; no lasting pattern"
        } else if a.reduced_period.is_none() {
            "no reduced period: relative equilibrium or too short a run"
        } else if !a.converged() {
            "not converged"
        } else if a.ill_conditioned() {
            "converged, ill-conditioned azimuth"
        } else {
            "converged"
        },
        "rates": rates,
        "resonant_rates": resonant,
        "max_energy_error_rel": run.monitor.reports()[0].max_rel_error,
    });
    hamel_cli::output::write(&dir.join("patterns.json"), format!("{summary:#}\n"))?;
    hamel_cli::out!("{}; points {}", headline(&run), names.join(", "));
    for (n, v) in &a.reduced {
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        hamel_cli::out!("  {n:<8} in [{lo:.6}, {hi:.6}]");
    }
    match a.reduced_period {
        Some(p) => hamel_cli::out!("dominant reduced period  {p:.6} s ({} whole periods in the run)", (run.options.steps as f64 * run.options.h / p).floor()),
        None => hamel_cli::out!("dominant reduced period  none (the reduced motion does not oscillate, or the run is shorter than two periods)"),
    }
    hamel_cli::out!(
        "critical rate Ω_c        {:.9} rad/s ({})",
        a.critical_rate,
        if a.periods_averaged > 0 {
            format!("mean over {} reduced periods", a.periods_averaged)
        } else {
            "least squares over the run".to_string()
        }
    );
    if let Some((x, y)) = a.rate_halves {
        hamel_cli::out!(
            "  over the first / last half of those periods: {x:.6} / {y:.6} rad/s{}",
            match (a.converged(), a.unstable()) {
                (_, true) => " — not converged: the reduced motion is unstable",
                (false, false) => " — not converged: run longer",
                _ => "",
            }
        );
    }
    match (symmetric, momentum) {
        (Some(false), Some(e)) => hamel_cli::out!(
            "  warning: the vertical angular momentum changed by {e:.1e} (relative): the model may lack the vertical symmetry this analysis assumes, and Ω_c is then not meaningful"
        ),
        (None, _) => hamel_cli::out!(
            "  note: the model monitors no vertical angular momentum (an invariant named `J…`): the vertical symmetry this analysis assumes is not checked"
        ),
        _ => {}
    }
    hamel_cli::out!(
        "  rotation read from the azimuth of {} (clearance from the axis {:.1} %)",
        a.azimuth_of,
        100.0 * a.axis_clearance
    );
    if a.ill_conditioned() {
        hamel_cli::out!("  note: every link and bob comes within {:.1} % of its largest horizontal length to the axis; the azimuth (the cyclic coordinate) is ill-conditioned there", 100.0 * a.axis_clearance);
    }
    if a.unstable() {
        hamel_cli::out!("  unstable: a perturbation of relative size 1e-9 grew {:.1e}-fold over the run; the motion evokes no lasting pattern, and its mean rate is not a critical rate", a.growth.unwrap_or(f64::NAN));
    }
    for r in &resonant {
        hamel_cli::out!(
            "  resonant rate k = {:>2}, n = {}: {:.6} rad/s",
            r["k"],
            r["n"],
            r["rate"].as_f64().unwrap_or(f64::NAN)
        );
    }
    hamel_cli::out!("wrote {}", dir.display());
    if case.summary.is_some() {
        hamel_cli::out!("{summary}");
    }
    Ok(())
}
