//! `hamel simulate`: one run, its table, CSV files, plots and summary.

use hamel_cli::{figures, scheme_name, Error};
use hamel_compiler::scheme::Scheme;

use super::case::{headline, out_dir, run_case_streamed};
use crate::CaseArgs;

pub fn simulate_cmd(case: &CaseArgs, scheme: Scheme) -> Result<(), Error> {
    hamel_cli::interrupt::watch();
    // The CSV files are written as the run goes (they hold every recorded
    // state however long the run); the run keeps about 20,000 for plots.
    let (run, dir) = match run_case_streamed(case, scheme) {
        Ok(r) => r,
        Err(Error::RunFailed { error, partial }) => {
            // What was computed up to the failure is worth seeing.
            let dir = out_dir(case, &partial.model, scheme_name(scheme))?;
            if !case.no_plots && partial.steps.len() > 1 {
                figures::write_with(&[&partial], &dir, &super::case::figure_options(case)?)?;
            }
            eprintln!(
                "the run stopped after {} good step(s); CSV files{} up to there are in {}",
                partial.options.steps,
                if case.no_plots { "" } else { " and plots" },
                dir.display()
            );
            if let Some(cause) = hamel_load::run::failure_cause(&error, &partial) {
                eprintln!("note: {cause}");
            }
            if let Some(location) = hamel_load::run::failure_location(&partial) {
                eprintln!("note: {location}");
            }
            return Err(Error::Step(error));
        }
        Err(e) => return Err(e),
    };
    let file = case.model.display().to_string();
    let summary = run.summary(&file);
    hamel_cli::output::write(&dir.join("summary.json"), format!("{summary:#}\n"))?;
    let plots = if case.no_plots {
        Vec::new()
    } else {
        figures::write_with(&[&run], &dir, &super::case::figure_options(case)?)?
    };
    hamel_cli::out!(
        "{}{}",
        headline(&run),
        if case.compensated { ", compensated" } else { "" }
    );
    hamel_cli::out!(
        "{:<28} {:>12} {:>14} {:>14}",
        "quantity",
        "initial",
        "max |error|",
        "max rel error"
    );
    let mut scaled = false;
    for r in run.monitor.reports() {
        let kind = match r.kind {
            k if k.is_residual() => " (constraint)",
            _ => "",
        };
        // An energy near zero is judged against the motion's kinetic
        // energy (see `Monitor::observe_kinetic`); the table shows that.
        let rel = match r.kind {
            hamel_runtime::InvariantKind::Energy => run.monitor.judged_energy_error(r),
            _ => r.max_rel_error,
        };
        let mark = if rel < r.max_rel_error {
            scaled = true;
            " *"
        } else {
            ""
        };
        hamel_cli::out!(
            "{:<28} {:>12.6e} {:>14.3e} {:>14.3e}{mark}",
            format!("{}{kind}", r.name),
            r.initial,
            r.max_abs_error,
            rel
        );
    }
    if scaled {
        hamel_cli::out!(
            "* relative to the largest kinetic energy, {:.3e}: the energy's initial value is smaller",
            run.monitor.kinetic_max()
        );
    }
    hamel_cli::out!(
        "Newton iterations/step {:.2} (max {}), factorizations/step {:.2}, {:.0} ns/step ({}, kernels prepared in {:.1} ms)",
        run.newton.mean(),
        run.newton.max_iterations,
        run.newton.factorizations_mean(),
        run.ns_per_step,
        run.backend,
        run.prepare_ms
    );
    if run.newton.restarts > 0 {
        hamel_cli::out!(
            "{} steps solved only when Newton was started again from the scheme's own predictor (the extrapolated guess failed): the motion is fast for this step size",
            run.newton.restarts
        );
    }
    hamel_cli::out!(
        "wrote {} (trajectory.csv, diagnostics.csv, summary.json{})",
        dir.display(),
        if plots.is_empty() { "" } else { ", plots" }
    );
    if case.summary.is_some() {
        hamel_cli::out!("{summary}");
    }
    if run.stopped {
        return Err(Error::Interrupted(format!(
            "stopped by Ctrl-C after {} steps (t = {}); the files above hold the run so far",
            run.options.steps,
            run.options.steps as f64 * run.options.h
        )));
    }
    untrustworthy(run.warnings())
}

/// `Ok` for a run without warnings; else every warning but the last on
/// standard error and the last as the error (exit code 3).
pub fn untrustworthy(mut warnings: Vec<String>) -> Result<(), Error> {
    let Some(last) = warnings.pop() else { return Ok(()) };
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    Err(Error::Untrustworthy(last))
}
