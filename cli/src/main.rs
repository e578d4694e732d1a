//! The `hamel` command: check, run, compare and report on model files
//! without compiling Rust (the run-time back-end of the compiler).

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hamel_cli::{Backend, Error};

#[derive(Parser)]
#[command(name = "hamel", version, about = "Structure-preserving integrators from model files")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// derive and compile afresh, without reading or writing the cache of
    /// derivations and machine code (by default in `$HAMEL_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/hamel` or `~/.cache/hamel`; `HAMEL_CACHE=off` also
    /// turns it off)
    #[arg(long, global = true)]
    no_cache: bool,
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
    #[arg(long = "t-end", allow_negative_numbers = true)]
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
    /// set a control input: a constant or an expression in `t`, sampled at each
    /// step's midpoint, e.g. `--input tau=2` or `--input "u1=0.5*sin(t)"`
    #[arg(long = "input", value_name = "NAME=EXPR")]
    input: Vec<String>,
    /// control inputs from a CSV file: a column `t` and one per input, held
    /// from each row's time on (zero-order hold); each step takes the mean
    /// over its interval (a schedule on the step grid: its own row)
    #[arg(long = "inputs", value_name = "FILE.csv", conflicts_with = "input")]
    inputs: Option<PathBuf>,
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
    /// the trajectory plot's axes: two coordinates or velocities, e.g. `--plot x,th` or `--plot th,th'`
    #[arg(long, value_name = "X,Y")]
    plot: Option<String>,
    /// what evaluates the model's kernels
    #[arg(long, value_enum, default_value_t = BackendArg::Jit)]
    backend: BackendArg,
    /// write into an output folder that holds files hamel did not write
    #[arg(long)]
    force: bool,
    /// Newton's relative tolerance, a positive number (default: machine
    /// epsilon, 2.2e-16); a looser one takes fewer iterations and leaves an
    /// error of about its size in every step
    #[arg(long = "newton-tol", value_name = "EPS", allow_negative_numbers = true)]
    newton_tol: Option<f64>,
    /// Newton's iteration bound, at least 1 (default 30); a step that needs
    /// more fails, naming the step
    #[arg(long = "newton-max-iter", value_name = "N", allow_negative_numbers = true)]
    newton_max_iter: Option<i64>,
    /// order of the step: 2, the scheme itself; 4 or 6, the scheme composed
    /// with itself (triple jump; Kahan–Li, 9 sub-steps), for symmetric schemes
    #[arg(long, value_name = "2|4|6", default_value_t = 2)]
    order: u32,
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
    /// Run one model under one scheme for every row of a CSV file of initial
    /// states and parameter values, on every core; one summary row per member.
    Sweep {
        #[command(flatten)]
        case: CaseArgs,
        /// scheme: hamel (= hamel_midpoint, the default where it applies;
        /// else the first that does of rattle, energy_momentum,
        /// stormer_verlet, hamel_averaged), hamel_averaged, stormer_verlet,
        /// rattle, energy_momentum
        #[arg(long)]
        scheme: Option<String>,
        /// CSV file: a header naming columns (`init`, parameters, coordinate or
        /// velocity components such as `th` or `x[1]`), one member per row
        #[arg(long, value_name = "FILE")]
        members: PathBuf,
        /// threads (default: one per core)
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Run a model file under one scheme: table, CSV files and plots.
    Simulate {
        #[command(flatten)]
        case: CaseArgs,
        /// scheme: hamel (= hamel_midpoint, the default where it applies;
        /// else the first that does of rattle, energy_momentum,
        /// stormer_verlet, hamel_averaged), hamel_averaged, stormer_verlet,
        /// rattle, energy_momentum
        #[arg(long)]
        scheme: Option<String>,
        /// kinematics of the hamel scheme (default: midpoint)
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
        /// write into a folder that holds files hamel did not write
        #[arg(long)]
        force: bool,
    },
    /// Reduced coordinates, dominant reduced period, critical rate Ω_c and
    /// rotating-frame views of a model with a vertical symmetry (docs/schemes.md §9).
    Patterns {
        #[command(flatten)]
        case: CaseArgs,
        /// scheme (default: the first that applies of energy_momentum, hamel_averaged, rattle, hamel_midpoint, stormer_verlet)
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
    hamel_cli::use_cache(if cli.no_cache {
        None
    } else {
        hamel_load::Cache::from_env()
    });
    let result = match cli.command {
        Command::Check { models, sizes } => cmd::check::check(&models, &sizes),
        Command::Simulate {
            case,
            scheme,
            kinematics,
        } => {
            let k = kinematics.map(|k| match k {
                KinematicsArg::Midpoint => "midpoint",
                KinematicsArg::Averaged => "averaged",
            });
            cmd::case::scheme_of(&case, scheme.as_deref(), k).and_then(|s| cmd::simulate::simulate_cmd(&case, s))
        }
        Command::Sweep {
            case,
            scheme,
            members,
            threads,
        } => cmd::case::scheme_of(&case, scheme.as_deref(), None)
            .and_then(|s| cmd::sweep::sweep_cmd(&case, s, &members, threads)),
        Command::Compare { case, schemes } => cmd::compare::compare_cmd(&case, &schemes),
        Command::Report { out, backend, force } => cmd::report::report_cmd(&out, backend.into(), force),
        Command::Patterns {
            case,
            scheme,
            rates,
            points,
        } => cmd::patterns::patterns_cmd(&case, scheme.as_deref(), &rates, &points),
    };
    match result {
        Ok(()) | Err(Error::ClosedOutput) => ExitCode::SUCCESS,
        Err(Error::Untrustworthy(msg)) => {
            eprintln!("warning: {msg}");
            ExitCode::from(3)
        }
        Err(Error::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(Error::Interrupted(msg)) => {
            eprintln!("{msg}");
            ExitCode::from(130)
        }
        Err(e) => {
            // a model file's diagnostics start with their own `error: `
            let msg = e.to_string();
            if msg.starts_with("error: ") {
                eprintln!("{msg}");
            } else {
                eprintln!("error: {msg}");
            }
            ExitCode::FAILURE
        }
    }
}
