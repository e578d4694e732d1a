//! The `hamel` command: check, run, compare and report on model files
//! without compiling Rust (the run-time back-end of the compiler).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hamel_cli::case::{self, pairs};
use hamel_cli::simulate::{self, Run, RunOptions};
use hamel_cli::{all_schemes, figures, load_model, parse_scheme, scheme_name, Backend, Error};
use hamel_compiler::scheme::Scheme;

#[derive(Parser)]
#[command(name = "hamel", version, about = "Structure-preserving integrators from model files")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Summary {
    /// one JSON object on the last line of stdout
    Json,
}

#[derive(Clone, Copy, Default, ValueEnum)]
enum BackendArg {
    /// native code compiled when the model is loaded
    #[default]
    Jit,
    /// the register-program interpreter
    Interpreter,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Jit => Backend::Jit,
            BackendArg::Interpreter => Backend::Interpreter,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum KinematicsArg {
    Midpoint,
    Averaged,
}

/// A model file and how to run it.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("length").required(true).args(["steps", "t_end"])))]
struct CaseArgs {
    /// model file (`*.hamel`)
    model: PathBuf,
    /// step size
    #[arg(long, allow_negative_numbers = true)]
    h: f64,
    /// number of steps
    #[arg(long)]
    steps: Option<u64>,
    /// final time (steps = round(T / h))
    #[arg(long = "t-end")]
    t_end: Option<f64>,
    /// set a parameter, e.g. `--set m=2` (indexed parameters as `m_1`)
    #[arg(long = "set", value_name = "PARAM=VALUE")]
    set: Vec<String>,
    /// named initial state of the model file (default: its first)
    #[arg(long)]
    init: Option<String>,
    /// set initial coordinates or velocities, e.g. `--state xi=0.6,0,0` or `--state "th'=0.1"`
    #[arg(long = "state", value_name = "VAR=V1,V2,…")]
    state: Vec<String>,
    /// set a size of the model, e.g. `--size N=4`
    #[arg(long = "size", value_name = "NAME=VALUE")]
    sizes: Vec<String>,
    /// compensated (TwoSum) summation of the increments
    #[arg(long)]
    compensated: bool,
    /// output folder for CSV files and plots
    #[arg(long)]
    out: Option<PathBuf>,
    /// print a machine-readable summary as the last line
    #[arg(long)]
    summary: Option<Summary>,
    /// record every K-th state in the CSV files (default: at most about 20,000 rows)
    #[arg(long, value_name = "K", default_value_t = 0)]
    every: u64,
    /// write CSV files only, no plots
    #[arg(long)]
    no_plots: bool,
    /// what evaluates the model's kernels
    #[arg(long, value_enum, default_value_t = BackendArg::Jit)]
    backend: BackendArg,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate model files; list what each scheme derives from them.
    Check {
        /// model files (`*.hamel`)
        #[arg(required = true)]
        models: Vec<PathBuf>,
        /// set a size of the model, e.g. `--size N=8`
        #[arg(long = "size", value_name = "NAME=VALUE")]
        sizes: Vec<String>,
    },
    /// Run a model file under one scheme: table, CSV files and plots.
    Simulate {
        #[command(flatten)]
        case: CaseArgs,
        /// scheme: hamel, hamel_midpoint, stormer_verlet, rattle, energy_momentum
        #[arg(long, default_value = "hamel")]
        scheme: String,
        /// kinematics of the hamel scheme
        #[arg(long, value_enum)]
        kinematics: Option<KinematicsArg>,
    },
    /// Run the same case under several schemes: one table, overlaid plots.
    Compare {
        #[command(flatten)]
        case: CaseArgs,
        /// comma-separated schemes (default: every scheme that applies)
        #[arg(long, value_delimiter = ',')]
        schemes: Vec<String>,
    },
    /// Reproduce the published spherical-pendulum study and the double-pendulum
    /// cases into a folder with plots and an index page (no arguments needed).
    Report {
        /// output folder
        #[arg(long, default_value = "hamel-report")]
        out: PathBuf,
        /// what evaluates the models' kernels
        #[arg(long, value_enum, default_value_t = BackendArg::Jit)]
        backend: BackendArg,
    },
    /// Reduced coordinates, dominant reduced period, critical rate Ω_c and
    /// rotating-frame views of a model with a vertical symmetry (theory §7.2).
    Patterns {
        #[command(flatten)]
        case: CaseArgs,
        /// scheme (default: the first that applies of energy_momentum, hamel, rattle, hamel_midpoint, stormer_verlet)
        #[arg(long)]
        scheme: Option<String>,
        /// extra rotation rates (rad/s) to view the motion from, comma-separated
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
        rates: Vec<f64>,
        /// bob positions: vector lets or vec3 coordinates of the model (default: `x[1], x[2], …` or `x1, x2, …` or every vec3 coordinate)
        #[arg(long, value_delimiter = ',')]
        points: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { models, sizes } => check(&models, &sizes),
        Command::Simulate {
            case,
            scheme,
            kinematics,
        } => {
            let k = kinematics.map(|k| match k {
                KinematicsArg::Midpoint => "midpoint",
                KinematicsArg::Averaged => "averaged",
            });
            parse_scheme(&scheme, k).and_then(|s| simulate_cmd(&case, s))
        }
        Command::Compare { case, schemes } => compare_cmd(&case, &schemes),
        Command::Report { out, backend } => report_cmd(&out, backend.into()),
        Command::Patterns {
            case,
            scheme,
            rates,
            points,
        } => patterns_cmd(&case, scheme.as_deref(), &rates, &points),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(models: &[PathBuf], sizes: &[String]) -> Result<(), Error> {
    let sizes = pairs::<i64>("--size", sizes)?;
    let mut failed = 0;
    for path in models {
        let model = match load_model(path, &sizes) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{e}");
                failed += 1;
                continue;
            }
        };
        println!(
            "{}: model `{}` — {} coordinate(s), {} velocit{}, {} parameter(s), {} velocity / {} holonomic constraint(s), initial states: {}",
            path.display(),
            model.name,
            model.coords.len(),
            model.vels.len(),
            if model.vels.len() == 1 { "y" } else { "ies" },
            model.params.len(),
            model.velocity_constraints.len(),
            model.holonomic.len(),
            if model.initials.is_empty() {
                "none".to_string()
            } else {
                model.initials.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            }
        );
        for (name, kin) in Scheme::ALL {
            let label = match kin {
                Some(k) => format!("{name}({k})"),
                None => name.to_string(),
            };
            let scheme = Scheme::from_names(name, kin).expect("known scheme");
            match scheme.derive(&model) {
                Ok(sys) => println!(
                    "  {label:<18} {} unknowns, state of {}",
                    sys.unknowns.len(),
                    sys.state.len()
                ),
                Err(e) => println!("  {label:<18} not applicable: {e}"),
            }
        }
    }
    if failed > 0 {
        Err(Error::Model(format!("{failed} model file(s) with errors")))
    } else {
        Ok(())
    }
}

fn steps_of(case: &CaseArgs) -> Result<u64, Error> {
    if !case.h.is_finite() || case.h == 0.0 {
        return Err(Error::Usage(format!(
            "--h {}: the step size must be finite and non-zero",
            case.h
        )));
    }
    match (case.steps, case.t_end) {
        (Some(n), _) => Ok(n),
        (None, Some(t)) => {
            let n = (t / case.h).round();
            if !n.is_finite() || n < 0.0 {
                return Err(Error::Usage(format!(
                    "--t-end {t} with --h {}: not a number of steps",
                    case.h
                )));
            }
            Ok(n as u64)
        }
        (None, None) => Err(Error::Usage("give --steps N or --t-end T".into())),
    }
}

fn run_case(case: &CaseArgs, scheme: Scheme) -> Result<Run, Error> {
    run_case_with(case, scheme, case.every).map(|(run, _)| run)
}

fn run_case_with(case: &CaseArgs, scheme: Scheme, every: u64) -> Result<(Run, hamel_cli::System), Error> {
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let params = pairs::<f64>("--set", &case.set)?;
    let steps = steps_of(case)?;
    let model = load_model(&case.model, &sizes)?;
    let sys = case::system(&model, scheme, case.backend.into(), &params)?;
    let (state, init) = case::initial(&sys, &case.model, case.init.as_deref(), &case.state)?;
    let opt = RunOptions {
        h: case.h,
        steps,
        compensated: case.compensated,
        record_every: every,
        progress: true,
    };
    let run = simulate::run(&sys, state, init, &opt)?;
    Ok((run, sys))
}

fn out_dir(case: &CaseArgs, model: &str, what: &str) -> PathBuf {
    case.out
        .clone()
        .unwrap_or_else(|| Path::new("hamel-out").join(format!("{model}-{what}")))
}

/// `model — scheme, h = …, N steps, initial state …`
fn headline(run: &Run) -> String {
    format!(
        "{} — {}, h = {}, {} steps{}",
        run.model,
        run.scheme,
        run.options.h,
        run.options.steps,
        run.initial
            .as_ref()
            .map(|i| format!(", initial state {i}"))
            .unwrap_or_default()
    )
}

fn simulate_cmd(case: &CaseArgs, scheme: Scheme) -> Result<(), Error> {
    let run = match run_case(case, scheme) {
        Ok(run) => run,
        Err(Error::RunFailed { error, partial }) => {
            // What was computed up to the failure is worth seeing.
            let dir = out_dir(case, &partial.model, scheme_name(scheme));
            partial.write_csv(&dir)?;
            if !case.no_plots && partial.steps.len() > 1 {
                figures::write(&[&partial], &dir)?;
            }
            eprintln!(
                "the run stopped after {} good step(s); CSV files{} up to there are in {}",
                partial.options.steps,
                if case.no_plots { "" } else { " and plots" },
                dir.display()
            );
            return Err(Error::Step(error));
        }
        Err(e) => return Err(e),
    };
    let file = case.model.display().to_string();
    let summary = run.summary(&file);
    let dir = out_dir(case, &run.model, scheme_name(scheme));
    run.write_csv(&dir)?;
    std::fs::write(dir.join("summary.json"), format!("{summary:#}\n")).map_err(Error::writing(&dir))?;
    let plots = if case.no_plots {
        Vec::new()
    } else {
        figures::write(&[&run], &dir)?
    };
    println!(
        "{}{}",
        headline(&run),
        if case.compensated { ", compensated" } else { "" }
    );
    println!(
        "{:<28} {:>12} {:>14} {:>14}",
        "quantity", "initial", "max |error|", "max rel error"
    );
    for r in run.monitor.reports() {
        let kind = match r.kind {
            hamel_runtime::InvariantKind::Energy => "",
            hamel_runtime::InvariantKind::Monitored => "",
            hamel_runtime::InvariantKind::Constraint => " (constraint)",
        };
        println!(
            "{:<28} {:>12.6e} {:>14.3e} {:>14.3e}",
            format!("{}{kind}", r.name),
            r.initial,
            r.max_abs_error,
            r.max_rel_error
        );
    }
    println!(
        "Newton iterations/step {:.2} (max {}), {:.0} ns/step ({}, kernels prepared in {:.1} ms)",
        run.newton.mean(),
        run.newton.max_iterations,
        run.ns_per_step,
        run.backend,
        run.prepare_ms
    );
    println!(
        "wrote {} (trajectory.csv, diagnostics.csv, summary.json{})",
        dir.display(),
        if plots.is_empty() { "" } else { ", plots" }
    );
    if case.summary.is_some() {
        println!("{summary}");
    }
    Ok(())
}

/// One row of a comparison table.
fn table_row(run: &Run, file: &str) -> (String, serde_json::Value) {
    let s = run.summary(file);
    let f = |k: &str| s[k].as_f64().map_or("—".to_string(), |v| format!("{v:.2e}"));
    (
        format!(
            "{:<30} {:>12} {:>12} {:>12} {:>10.0} {:>7.2}",
            run.scheme,
            f("max_energy_error_rel"),
            f("max_constraint_error"),
            f("max_momentum_error_rel"),
            run.ns_per_step,
            run.newton.mean()
        ),
        s,
    )
}

fn compare_cmd(case: &CaseArgs, schemes: &[String]) -> Result<(), Error> {
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let model = load_model(&case.model, &sizes)?;
    let chosen: Vec<Scheme> = if schemes.is_empty() {
        all_schemes().into_iter().filter(|s| s.derive(&model).is_ok()).collect()
    } else {
        schemes
            .iter()
            .map(|s| parse_scheme(s.trim(), None))
            .collect::<Result<_, _>>()?
    };
    if chosen.is_empty() {
        return Err(Error::Scheme(format!("no scheme applies to {}", case.model.display())));
    }
    let mut runs = Vec::new();
    for &s in &chosen {
        runs.push(run_case(case, s)?);
    }
    let file = case.model.display().to_string();
    let dir = out_dir(case, &model.name, "compare");
    for (r, s) in runs.iter().zip(&chosen) {
        r.write_csv(&dir.join(scheme_name(*s)))?;
    }
    if !case.no_plots {
        figures::write(&runs.iter().collect::<Vec<_>>(), &dir)?;
    }
    let first = &runs[0];
    println!(
        "{} — h = {}, {} steps{}",
        first.model,
        first.options.h,
        first.options.steps,
        first
            .initial
            .as_ref()
            .map(|i| format!(", initial state {i}"))
            .unwrap_or_default()
    );
    println!(
        "{:<30} {:>12} {:>12} {:>12} {:>10} {:>7}",
        "scheme", "max|ΔE/E|", "constraint", "max|ΔJ/J|", "ns/step", "Newton"
    );
    let mut all = Vec::new();
    for r in &runs {
        let (row, s) = table_row(r, &file);
        println!("{row}");
        all.push(s);
    }
    let summary = serde_json::json!({ "model": first.model, "file": file, "runs": all });
    std::fs::write(dir.join("summary.json"), format!("{summary:#}\n")).map_err(Error::writing(&dir))?;
    println!("wrote {}", dir.display());
    if case.summary.is_some() {
        println!("{summary}");
    }
    Ok(())
}

fn patterns_cmd(case: &CaseArgs, scheme: Option<&str>, rates: &[f64], points: &[String]) -> Result<(), Error> {
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
    let a = patterns::analyse(&t, &pos);
    let dir = out_dir(case, &run.model, "patterns");
    run.write_csv(&dir)?;
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
    std::fs::write(dir.join("reduced.csv"), csv).map_err(Error::writing(&dir))?;
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
        "rates": rates,
        "resonant_rates": resonant,
        "max_energy_error_rel": run.monitor.reports()[0].max_rel_error,
    });
    std::fs::write(dir.join("patterns.json"), format!("{summary:#}\n")).map_err(Error::writing(&dir))?;
    println!("{}; points {}", headline(&run), names.join(", "));
    for (n, v) in &a.reduced {
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        println!("  {n:<8} in [{lo:.6}, {hi:.6}]");
    }
    match a.reduced_period {
        Some(p) => println!("dominant reduced period  {p:.6} s ({} whole periods in the run)", (run.options.steps as f64 * run.options.h / p).floor()),
        None => println!("dominant reduced period  none (the reduced motion does not oscillate, or the run is shorter than two periods)"),
    }
    println!(
        "critical rate Ω_c        {:.9} rad/s ({})",
        a.critical_rate,
        if a.periods_averaged > 0 {
            format!("mean over {} reduced periods", a.periods_averaged)
        } else {
            "least squares over the run".to_string()
        }
    );
    if let Some((x, y)) = a.rate_halves {
        println!(
            "  over the first / last half of those periods: {x:.6} / {y:.6} rad/s{}",
            if (x - y).abs() > 1e-3 * x.abs().max(1e-12) {
                " — not converged: run longer"
            } else {
                ""
            }
        );
    }
    if a.axis_clearance < 0.05 {
        println!("  note: link 1 comes within {:.1} % of its largest horizontal length to the axis; its azimuth (the cyclic coordinate) is ill-conditioned there", 100.0 * a.axis_clearance);
    }
    for r in &resonant {
        println!(
            "  resonant rate k = {:>2}, n = {}: {:.6} rad/s",
            r["k"],
            r["n"],
            r["rate"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!("wrote {}", dir.display());
    if case.summary.is_some() {
        println!("{summary}");
    }
    Ok(())
}

fn report_cmd(out: &Path, backend: Backend) -> Result<(), Error> {
    let started = std::time::Instant::now();
    eprintln!("hamel report: writing {} ({backend} back-end)", out.display());
    let index = hamel_cli::report::write(out, backend, &mut |line| eprintln!("{line}"))?;
    println!(
        "report written in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        index.display()
    );
    println!("(also {})", out.join("index.md").display());
    Ok(())
}
