//! What `simulate`, `compare` and `patterns` share: one case run from the command line.

use std::path::{Path, PathBuf};

use hamel_cli::case::{self, pairs};
use hamel_cli::simulate::{self, Run, RunOptions};
use hamel_cli::{load_model_for, num, parse_scheme, Error};
use hamel_compiler::scheme::Scheme;
use hamel_runtime::NewtonOptions;

use crate::CaseArgs;

/// The scheme of `--scheme` (and `--kinematics`), or where neither is
/// given the model's default ([`Scheme::default_for`]): `hamel` where it
/// applies, else (a model with holonomic constraints in Cartesian
/// coordinates, say) the first scheme that does, announced with the reason
/// `hamel` does not.
pub fn scheme_of(case: &CaseArgs, named: Option<&str>, kinematics: Option<&str>) -> Result<Scheme, Error> {
    if named.is_some() || kinematics.is_some() {
        return parse_scheme(named.unwrap_or("hamel"), kinematics);
    }
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let model = load_model_for(&case.model, &sizes, &[])?;
    let (scheme, why) = Scheme::default_for(&model).map_err(|e| Error::Scheme(e.to_string()))?;
    if let Some(why) = why {
        eprintln!(
            "note: no --scheme given; running {} (the default, hamel, does not apply: {why})",
            scheme.name()
        );
    }
    Ok(scheme)
}

/// The number of steps of `--steps N` or `--t-end T` with `--h H` (the
/// rule of [`hamel_load::step_count`]), refused with the flags named.
pub fn steps_of(case: &CaseArgs) -> Result<u64, Error> {
    use hamel_load::LengthError as L;
    hamel_load::step_count(case.h, case.steps.map(i128::from), case.t_end).map_err(|e| {
        Error::Usage(match (&e, case.t_end) {
            (L::StepSize(_), _) => format!("--h {}: {e}", num(case.h)),
            (L::Neither | L::Both, _) => "give --steps N or --t-end T".into(),
            (_, Some(t)) => format!("--t-end {} with --h {}: {e}", num(t), num(case.h)),
            (_, None) => format!("--steps: {e}"),
        })
    })
}

/// The Newton options of `--newton-tol` and `--newton-max-iter` (the
/// defaults where not given), refused with the flag named where no solve can
/// honour them.
pub fn newton_of(case: &CaseArgs) -> Result<NewtonOptions, Error> {
    let mut newton = NewtonOptions::default();
    if let Some(tol) = case.newton_tol {
        if !(tol.is_finite() && tol > 0.0) {
            return Err(Error::Usage(format!(
                "--newton-tol {tol}: the Newton tolerance must be a positive finite number (default {:e})",
                newton.tolerance
            )));
        }
        newton.tolerance = tol;
    }
    if let Some(n) = case.newton_max_iter {
        newton.max_iterations = usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
            Error::Usage(format!(
                "--newton-max-iter {n}: the Newton iteration bound must be at least 1 (default {})",
                newton.max_iterations
            ))
        })?;
    }
    Ok(newton)
}

/// `--order`: the order of the steps (2, or the scheme composed to 4 or 6).
pub fn set_order(sys: &mut hamel_cli::System, order: u32) -> Result<(), Error> {
    sys.set_order(order)
        .map_err(|e| Error::Usage(format!("--order {order}: {e}")))
}

/// A case ready to run: its compiled system, initial state and options.
pub struct Prepared {
    pub model: String,
    /// the model itself, to explain a failure at the first step
    pub ir: hamel_compiler::Model,
    pub sys: hamel_cli::System,
    pub state: hamel_runtime::DynState,
    pub init: Option<String>,
    pub opt: RunOptions,
}

/// Reads, compiles and sets up a case, recording one state in `every`; the
/// cost of deriving `scheme` at the case's sizes is checked on reading the
/// model unless `checked` already (`compare` checks all its schemes at once).
pub fn prepare(case: &CaseArgs, scheme: Scheme, every: u64, checked: bool) -> Result<Prepared, Error> {
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let params = pairs::<f64>("--set", &case.set)?;
    let steps = steps_of(case)?;
    let newton = newton_of(case)?;
    let guarded: &[Scheme] = if checked { &[] } else { &[scheme] };
    let model = load_model_for(&case.model, &sizes, guarded)?;
    let mut sys = case::system(&model, scheme, case.backend.into(), &params)?;
    set_order(&mut sys, case.order)?;
    let (state, init) = case::initial(&sys, &case.model, case.init.as_deref(), &case.state)?;
    check_plot(case, &sys)?;
    let inputs = inputs_of(case, &sys)?;
    let opt = RunOptions {
        h: case.h,
        steps,
        compensated: case.compensated,
        record_every: every,
        inputs,
        newton,
    };
    Ok(Prepared {
        model: model.name.clone(),
        ir: model,
        sys,
        state,
        init,
        opt,
    })
}

/// The input schedule of `--inputs FILE` or `--input NAME=EXPR` (none
/// without either), refused with the flag named.
pub fn inputs_of(case: &CaseArgs, sys: &hamel_cli::System) -> Result<Option<hamel_load::Schedule>, Error> {
    let names: Vec<&str> = sys.compiled().inputs.iter().map(String::as_str).collect();
    Ok(match (&case.inputs, case.input.is_empty()) {
        (Some(f), _) => Some(hamel_load::Schedule::from_csv(&names, f).map_err(Error::Usage)?),
        (None, false) => Some(
            hamel_load::Schedule::from_assignments(&names, &case.input)
                // the library says `input …`; here it came from `--input`
                .map_err(|e| Error::Usage(if e.starts_with("input `") { format!("--{e}") } else { e }))?,
        ),
        (None, true) => None,
    })
}

/// Checks `--plot X,Y` against the model's components before the run (a
/// typo would otherwise be found only when the figures are drawn).
pub fn check_plot(case: &CaseArgs, sys: &hamel_cli::System) -> Result<(), Error> {
    if case.no_plots {
        return Ok(());
    }
    if let Some(axes) = figure_options(case)?.axes {
        let c = sys.compiled();
        hamel_cli::figures::check_axis_names(&c.model, &c.coordinates, &c.velocities, &axes)?;
    }
    Ok(())
}

/// Runs a case streaming its CSV files into the case's output folder
/// (claimed first); returns the run (about 20,000 states kept for plots) and the folder.
pub fn run_case_streamed(case: &CaseArgs, scheme: Scheme) -> Result<(Run, PathBuf), Error> {
    run_case_into(case, scheme, None, false)
}

/// [`run_case_streamed`] into `dir` (already claimed), or into the case's
/// own folder when `None`; the cost of deriving `scheme` checked already if
/// `checked` (see [`prepare`]).
pub fn run_case_into(
    case: &CaseArgs,
    scheme: Scheme,
    dir: Option<&Path>,
    checked: bool,
) -> Result<(Run, PathBuf), Error> {
    let p = prepare(case, scheme, case.every, checked)?;
    // Refused before the output folder is touched.
    hamel_load::run::check_run(&p.sys, &p.opt).map_err(|e| Error::Usage(hamel_cli::simulate::with_flags(e)))?;
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => out_dir(case, &p.model, hamel_cli::scheme_name(scheme))?,
    };
    let start = p.state.clone();
    let run = simulate::run_into(&p.sys, p.state, p.init, &p.opt, &dir);
    if let Err(Error::RunFailed {
        error: hamel_runtime::StepError::NonFinite { step: 0, .. },
        ..
    }) = &run
    {
        let hint = hamel_load::steps::first_step_hint(&p.ir, &p.sys, &start, &p.opt);
        if let Some(hint) = hint {
            eprintln!("note: {hint}");
        }
    }
    run.map(|r| (r, dir))
}

/// Runs a case keeping its states in memory; the cost of deriving `scheme`
/// checked already if `checked` (see [`prepare`]).
pub fn run_case_with(
    case: &CaseArgs,
    scheme: Scheme,
    every: u64,
    checked: bool,
) -> Result<(Run, hamel_cli::System), Error> {
    let p = prepare(case, scheme, every, checked)?;
    let run = simulate::run(&p.sys, p.state, p.init, &p.opt, true)?;
    Ok((run, p.sys))
}

/// The output folder of a case, claimed for hamel (see [`hamel_cli::output::claim_dir`]).
pub fn out_dir(case: &CaseArgs, model: &str, what: &str) -> Result<PathBuf, Error> {
    let dir = case
        .out
        .clone()
        .unwrap_or_else(|| Path::new("hamel-out").join(format!("{model}-{what}")));
    hamel_cli::output::claim_dir(&dir, case.force)?;
    Ok(dir)
}

/// The figures `--plot` asks for.
pub fn figure_options(case: &CaseArgs) -> Result<hamel_cli::figures::Options, Error> {
    let axes = match &case.plot {
        None => None,
        Some(p) => {
            let (a, b) = p
                .split_once(',')
                .ok_or_else(|| Error::Usage(format!("--plot {p}: expected two names, X,Y")))?;
            Some((a.trim().to_string(), b.trim().to_string()))
        }
    };
    Ok(hamel_cli::figures::Options {
        no_trajectory: false,
        axes,
    })
}

/// `model — scheme, h = …, N steps, initial state …`
pub fn headline(run: &Run) -> String {
    format!(
        "{} — {}, h = {}, {} steps{}",
        run.model,
        run.scheme,
        num(run.options.h),
        run.options.steps,
        run.initial
            .as_ref()
            .map(|i| format!(", initial state {i}"))
            .unwrap_or_default()
    )
}
