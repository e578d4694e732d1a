//! `hamel compare`: the same case under several schemes.

use hamel_cli::case::pairs;
use hamel_cli::simulate::Run;
use hamel_cli::{all_schemes, figures, load_model_for, parse_scheme, scheme_name, Error};
use hamel_compiler::scheme::Scheme;

use super::case::{newton_of, out_dir, run_case_into};
use crate::CaseArgs;

/// One row of a comparison table.
pub fn table_row(run: &Run, file: &str) -> (String, serde_json::Value) {
    let s = run.summary(file);
    let f = |k: &str| s[k].as_f64().map_or("—".to_string(), |v| format!("{v:.2e}"));
    // A forced model's energy changes by the forces' work: its column holds
    // the energy balance error, which the run is judged on.
    let energy = if s["forced"].as_bool() == Some(true) {
        "max_energy_balance_error_rel"
    } else {
        "max_energy_error_rel"
    };
    (
        format!(
            "{:<30} {:>12} {:>12} {:>12} {:>10.0} {:>7.2}",
            run.scheme,
            f(energy),
            f("max_constraint_error"),
            f("max_momentum_error_rel"),
            run.ns_per_step,
            run.newton.mean()
        ),
        s,
    )
}

pub fn compare_cmd(case: &CaseArgs, schemes: &[String]) -> Result<(), Error> {
    // Refused before the output folder is claimed.
    newton_of(case)?;
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let named: Vec<Scheme> = schemes
        .iter()
        .map(|s| parse_scheme(s.trim(), None))
        .collect::<Result<_, _>>()?;
    // The cost of deriving them all is checked at once, before the first
    // run (every scheme, where none is named: those that do not apply are
    // left out of the estimate).
    let all = all_schemes();
    let model = load_model_for(&case.model, &sizes, if named.is_empty() { &all } else { &named })?;
    let chosen: Vec<Scheme> = if named.is_empty() {
        all.into_iter().filter(|s| s.applies(&model).is_ok()).collect()
    } else {
        named
    };
    if chosen.is_empty() {
        return Err(Error::Scheme(format!("no scheme applies to {}", case.model.display())));
    }
    // A scheme that fails is named, and the others' results are kept.
    let mut runs = Vec::new();
    let mut ran = Vec::new();
    let mut failures: Vec<(Scheme, String)> = Vec::new();
    // Each scheme's CSV files are written as its run goes, into a subfolder.
    let dir = out_dir(case, &model.name, "compare")?;
    for &s in &chosen {
        match run_case_into(case, s, Some(&dir.join(scheme_name(s))), true).map(|(r, _)| r) {
            Ok(r) => {
                runs.push(r);
                ran.push(s);
            }
            Err(Error::RunFailed { error, partial }) => {
                failures.push((s, hamel_load::run::failure_message(&error, &partial)));
                if partial.steps.len() > 1 {
                    runs.push(*partial);
                    ran.push(s);
                }
            }
            Err(e @ (Error::Usage(_) | Error::Read { .. } | Error::Model(_))) => return Err(e),
            Err(e) => failures.push((s, e.to_string())),
        }
    }
    for (s, msg) in &failures {
        eprintln!("{}: {msg}", scheme_name(*s));
    }
    if runs.is_empty() {
        return Err(Error::Scheme(format!(
            "every scheme failed on {}",
            case.model.display()
        )));
    }
    let file = case.model.display().to_string();
    if !case.no_plots {
        figures::write_with(
            &runs.iter().collect::<Vec<_>>(),
            &dir,
            &super::case::figure_options(case)?,
        )?;
    }
    let first = &runs[0];
    hamel_cli::out!(
        "{} — h = {}, {} steps{}",
        first.model,
        hamel_cli::num(first.options.h),
        first.options.steps,
        first
            .initial
            .as_ref()
            .map(|i| format!(", initial state {i}"))
            .unwrap_or_default()
    );
    let forced = runs.iter().any(|r| r.summary(&file)["forced"].as_bool() == Some(true));
    if forced {
        hamel_cli::out!("forced model: the energy column is the energy balance error (E − E₀ − ΣW, relative), which runs are judged on; the energy itself changes by the work");
    }
    hamel_cli::out!(
        "{:<30} {:>12} {:>12} {:>12} {:>10} {:>7}",
        "scheme",
        if forced { "max|Δbal|" } else { "max|ΔE/E|" },
        "constraint",
        "max|ΔJ/J|",
        "ns/step",
        "Newton"
    );
    let mut all = Vec::new();
    for (r, sch) in runs.iter().zip(&ran) {
        let (row, mut s) = table_row(r, &file);
        let failed = failures.iter().find(|(f, _)| f == sch);
        match failed {
            Some((_, msg)) => {
                hamel_cli::out!("{row}  (failed after {} steps)", r.options.steps);
                s["error"] = msg.clone().into();
            }
            None => hamel_cli::out!("{row}"),
        }
        all.push(s);
    }
    for (sch, msg) in failures.iter().filter(|(f, _)| !ran.contains(f)) {
        hamel_cli::out!("{:<30} failed: {msg}", scheme_name(*sch));
        all.push(serde_json::json!({ "scheme": scheme_name(*sch), "ok": false, "error": msg }));
    }
    let summary = serde_json::json!({ "model": first.model, "file": file, "runs": all });
    hamel_cli::output::write(&dir.join("summary.json"), format!("{summary:#}\n"))?;
    hamel_cli::out!("wrote {}", dir.display());
    if case.summary.is_some() {
        hamel_cli::out!("{summary}");
    }
    if let Some((sch, msg)) = failures.first() {
        return Err(Error::Scheme(format!(
            "{} of {} scheme(s) failed; first: {}: {msg}",
            failures.len(),
            chosen.len(),
            scheme_name(*sch)
        )));
    }
    super::simulate::untrustworthy(
        runs.iter()
            .flat_map(|r| r.warnings().into_iter().map(move |w| format!("{}: {w}", r.scheme)))
            .collect(),
    )
}
