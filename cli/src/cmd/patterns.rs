//! `hamel patterns`: reduced coordinates, reduced period, critical rate, rotating views.

use hamel_cli::case::pairs;
use hamel_cli::patterns::Analysis;
use hamel_cli::simulate::Run;
use hamel_cli::{load_model_for, parse_scheme, Error};

use super::case::{headline, out_dir, run_case_with};
use crate::CaseArgs;

pub fn patterns_cmd(case: &CaseArgs, scheme: Option<&str>, rates: &[f64], points: &[String]) -> Result<(), Error> {
    use hamel_cli::patterns;
    check_arguments(case, rates, points)?;
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let named = scheme.map(|s| parse_scheme(s, None)).transpose()?;
    // A named scheme's cost is checked on reading the model; the one
    // chosen here, when it is read again to run.
    let model = load_model_for(&case.model, &sizes, named.as_slice())?;
    let scheme = match named {
        Some(s) => s,
        // Those that keep the vertical momentum exactly first.
        None => [
            "energy_momentum",
            "hamel_averaged",
            "rattle",
            "hamel_midpoint",
            "stormer_verlet",
        ]
        .iter()
        .filter_map(|n| parse_scheme(n, None).ok())
        .find(|s| s.applies(&model).is_ok())
        .ok_or_else(|| Error::Scheme(format!("no scheme applies to {}", case.model.display())))?,
    };
    // The azimuth is unwrapped record by record: keep every step unless asked otherwise.
    let every = if case.every > 0 { case.every } else { 1 };
    let (run, sys) = run_case_with(case, scheme, every, named.is_some())?;
    // The analysis assumes a symmetry about the vertical: its momentum must
    // be monitored, or nothing checks that the rate means anything. (A
    // quantity linear in the velocities that the free motion does not
    // conserve is not a momentum: the compiler checks it.)
    if run.momentum_indices().is_empty() {
        return Err(Error::Usage(format!(
            "{}: model `{}` monitors no conserved momentum, so it lacks the vertical symmetry `patterns` assumes \
             or does not say so; declare the vertical angular momentum, e.g. `invariant J = m * cross(x, v)[2]` \
             (summed over the bobs), of a model symmetric about the vertical",
            case.model.display(),
            run.model
        )));
    }
    let pts = patterns::points(sys.compiled(), points)?;
    let pos = patterns::positions(&sys, &run, &pts);
    let t: Vec<f64> = (0..run.steps.len()).map(|k| run.time(k)).collect();
    let mut a = patterns::analyse(&t, &pos);
    a.divergence = patterns::divergence(&run, &sys, a.reduced_period)?;
    let dir = out_dir(case, &run.model, "patterns")?;
    hamel_cli::simulate::write_csv(&run, &dir)?;
    let names: Vec<&str> = pts.iter().map(|(n, _)| n.as_str()).collect();
    if !case.no_plots {
        patterns::write_plots(&dir, &run, &a, &pos, &names, rates)?;
    }
    hamel_cli::output::write(&dir.join("reduced.csv"), reduced_csv(&t, &a))?;
    let momentum = run
        .momentum_indices()
        .into_iter()
        .map(|i| run.monitor.reports()[i].max_rel_error)
        .reduce(f64::max);
    // 1e-3: schemes that keep it only to O(h²) (the director Hamel chain)
    // stay near 1e-5; a horizontal force changes it by O(1).
    let symmetric = momentum.map(|e| e <= 1e-3);
    let resonant = resonant_rates(&a);
    let summary = summary(case, &run, &a, &names, symmetric, rates, &resonant);
    hamel_cli::output::write(&dir.join("patterns.json"), format!("{summary:#}\n"))?;
    hamel_cli::out!("{}; points {}", headline(&run), names.join(", "));
    print_analysis(&run, &a, symmetric.zip(momentum), &resonant)?;
    hamel_cli::out!("wrote {}", dir.display());
    if case.summary.is_some() {
        hamel_cli::out!("{summary}");
    }
    if let (Some(false), Some(e)) = (symmetric, momentum) {
        return Err(Error::Untrustworthy(format!(
            "{}: the vertical angular momentum changed by {e:.1e} (relative), so the model lacks the vertical symmetry `patterns` assumes; its rate is not a critical rate",
            case.model.display()
        )));
    }
    Ok(())
}

/// Refuses, before anything runs, arguments that would give a meaningless analysis.
fn check_arguments(case: &CaseArgs, rates: &[f64], points: &[String]) -> Result<(), Error> {
    if let Some(bad) = rates.iter().find(|r| !r.is_finite()) {
        return Err(Error::Usage(format!("--rates: {bad} is not a finite rate")));
    }
    for (j, p) in points.iter().enumerate() {
        if let Some(i) = points[..j].iter().position(|q| q.trim() == p.trim()) {
            return Err(Error::Usage(format!(
                "--points: `{}` is given twice (positions {} and {}); each bob is one point",
                p.trim(),
                i + 1,
                j + 1
            )));
        }
    }
    if case.steps == Some(0) {
        return Err(Error::Usage(
            "--steps 0: a pattern needs a run; give at least a few reduced periods (e.g. --t-end 100)".into(),
        ));
    }
    Ok(())
}

/// The reduced coordinates and the azimuth, one row per record.
fn reduced_csv(t: &[f64], a: &Analysis) -> String {
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
    csv
}

/// Ω_c + 2πk/(nT) for the low resonances (none without a reduced period).
fn resonant_rates(a: &Analysis) -> Vec<serde_json::Value> {
    match a.reduced_period {
        Some(p) => [(1i32, 1i32), (-1, 1), (1, 2), (-1, 2), (1, 3), (-1, 3)]
            .iter()
            .map(|&(k, n)| {
                serde_json::json!({"k": k, "n": n, "rate": a.critical_rate + 2.0 * std::f64::consts::PI * k as f64 / (n as f64 * p)})
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The verdict on the pattern, most serious first.
fn verdict(a: &Analysis, symmetric: Option<bool>) -> String {
    match a.divergence {
        _ if symmetric == Some(false) => "no vertical symmetry: the rate is not a critical rate".to_string(),
        Some(d) if a.unstable() => format!(
            "unstable: a tiny perturbation grows e-fold every {:.3} s (divergence rate {:.4} /s); the pattern does not last",
            1.0 / d.rate,
            d.rate
        ),
        _ if a.reduced_period.is_none() => "no reduced period: relative equilibrium or too short a run".to_string(),
        _ if !a.converged() => "not converged".to_string(),
        _ if a.ill_conditioned() => "converged, ill-conditioned azimuth".to_string(),
        _ => "converged".to_string(),
    }
}

/// `patterns.json`.
fn summary(
    case: &CaseArgs,
    run: &Run,
    a: &Analysis,
    names: &[&str],
    symmetric: Option<bool>,
    rates: &[f64],
    resonant: &[serde_json::Value],
) -> serde_json::Value {
    serde_json::json!({
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
        "perturbation_growth": a.divergence.map(|d| d.growth),
        "divergence_rate": a.divergence.map(|d| d.rate),
        "divergence_segment": a.divergence.map(|d| d.segment),
        "verdict": verdict(a, symmetric),
        "rates": rates,
        "resonant_rates": resonant,
        "max_energy_error_rel": run.monitor.reports()[0].max_rel_error,
    })
}

/// The analysis as text; `symmetry`: whether the vertical momentum was kept, and its error.
fn print_analysis(
    run: &Run,
    a: &Analysis,
    symmetry: Option<(bool, f64)>,
    resonant: &[serde_json::Value],
) -> Result<(), Error> {
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
    if let Some((false, e)) = symmetry {
        hamel_cli::out!(
            "  warning: the vertical angular momentum changed by {e:.1e} (relative): the model may lack the vertical symmetry this analysis assumes, and Ω_c is then not meaningful"
        );
    }
    hamel_cli::out!(
        "  rotation read from the azimuth of {} (clearance from the axis {:.1} %)",
        a.azimuth_of,
        100.0 * a.axis_clearance
    );
    if a.ill_conditioned() {
        hamel_cli::out!("  note: every link and bob comes within {:.1} % of its largest horizontal length to the axis; the azimuth (the cyclic coordinate) is ill-conditioned there", 100.0 * a.axis_clearance);
    }
    match a.divergence {
        Some(d) if a.unstable() => hamel_cli::out!(
            "  unstable: a perturbation grows e-fold every {:.3} s (divergence rate {:.4} /s; {}-fold over the last {:.1} s); the pattern does not last, and its mean rate is a critical rate only over times short against that",
            1.0 / d.rate, d.rate, growth_text(d.growth), d.span
        ),
        Some(d) => hamel_cli::out!(
            "  no exponential growth: a perturbation grew {:.2}-fold over the last {:.1} s (growth linear in time gives at most 2)",
            d.growth, d.span
        ),
        None => hamel_cli::out!("  stability not measured: the run is shorter than 20 steps"),
    }
    for r in resonant {
        hamel_cli::out!(
            "  resonant rate k = {:>2}, n = {}: {:.6} rad/s",
            r["k"],
            r["n"],
            r["rate"].as_f64().unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

/// A growth factor as a reader takes it in: `66.3`, but `3.08e23` where
/// fixed notation would print a 24-digit integer.
fn growth_text(growth: f64) -> String {
    if growth.abs() < 1e6 {
        format!("{growth:.1}")
    } else {
        format!("{growth:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::growth_text;

    #[test]
    fn growth_factors_never_print_as_long_integers() {
        assert_eq!(growth_text(66.34), "66.3");
        // Pattern III over 150 s: fixed notation printed 307715441302973701947392.0.
        assert_eq!(growth_text(3.077154413029737e23), "3.08e23");
    }
}
