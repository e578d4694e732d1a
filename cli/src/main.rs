//! The `hamel` command. For now: `hamel check MODEL…` parses and validates
//! model files and derives every scheme that applies, without compiling Rust.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hamel_compiler::scheme::Scheme;

#[derive(Parser)]
#[command(name = "hamel", version, about = "Structure-preserving integrators from model files")]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
}

fn parse_sizes(sizes: &[String]) -> Result<Vec<(String, i64)>, String> {
    sizes
        .iter()
        .map(|s| {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| format!("--size {s}: expected NAME=VALUE"))?;
            let v = value.trim().parse::<i64>().map_err(|e| format!("--size {s}: {e}"))?;
            Ok((name.trim().to_string(), v))
        })
        .collect()
}

/// Checks one file; prints a report and returns whether it is valid.
fn check(path: &PathBuf, sizes: &[(String, i64)]) -> bool {
    let shown = path.display().to_string();
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot read model file `{shown}`: {e}");
            return false;
        }
    };
    let model = match hamel_compiler::model::load_with_sizes(&shown, &src, sizes) {
        Ok(m) => m,
        Err(diags) => {
            eprintln!("{diags}");
            eprintln!("{shown}: {} error(s)", diags.0.len());
            return false;
        }
    };
    println!(
        "{shown}: model `{}` — {} coordinate(s), {} velocit{}, {} parameter(s), {} velocity / {} holonomic constraint(s), initial states: {}",
        model.name,
        model.coords.len(),
        model.vels.len(),
        if model.vels.len() == 1 { "y" } else { "ies" },
        model.params.len(),
        model.velocity_constraints.len(),
        model.holonomic.len(),
        if model.initials.is_empty() { "none".to_string() } else { model.initials.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ") }
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
    true
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { models, sizes } => {
            let sizes = match parse_sizes(&sizes) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let ok = models.iter().map(|m| check(m, &sizes)).fold(true, |a, b| a & b);
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
