//! Runs from the command line: [`hamel_load::run()`] with a progress bar on a
//! terminal, and the run's CSV files.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use hamel_runtime::{DynState, InvariantKind};

pub use hamel_load::run::{Run, RunOptions};

use crate::{Error, System};

/// Runs `sys` from `state`, with a progress bar on a terminal for runs
/// longer than about a second when `progress` is set. A failed step ends the
/// run with [`Error::RunFailed`] (the run up to there inside).
pub fn run(
    sys: &System,
    state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    progress: bool,
) -> Result<Run, Error> {
    let started = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut tick = |k: u64| {
        if progress && bar.is_none() && started.elapsed() > Duration::from_secs(1) && std::io::stderr().is_terminal() {
            // Created late, at the current position, so the rate (and ETA) it
            // estimates is that of the steps still to come.
            let b = indicatif::ProgressBar::new(opt.steps).with_position(k);
            b.set_style(
                indicatif::ProgressStyle::with_template("[{bar:30}] {pos}/{len} steps, {eta} left ({msg})")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b.set_message(sys.compiled().scheme.clone());
            b.reset_eta();
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(k);
        }
    };
    let result = hamel_load::run::run_observed(sys, state, initial, opt, &mut tick);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.map_err(|e| match e {
        hamel_load::RunError::Start(e) => Error::Step(e),
        hamel_load::RunError::TooLarge(m) => Error::Usage(m),
        hamel_load::RunError::Failed(f) => Error::RunFailed {
            error: f.error,
            partial: f.partial,
        },
    })
}

/// Writes `trajectory.csv` (step, t, q, ξ) and `diagnostics.csv` (step, t,
/// each quantity and its error) of `run` into `dir`.
pub fn write_csv(run: &Run, dir: &Path) -> Result<(), Error> {
    let out = Error::writing(dir);
    std::fs::create_dir_all(dir).map_err(out)?;
    let mut t = std::io::BufWriter::new(crate::output::create(&dir.join("trajectory.csv"))?);
    let header: Vec<String> = ["step".to_string(), "t".to_string()]
        .into_iter()
        .chain(run.coordinates.iter().cloned())
        .chain(run.velocities.iter().cloned())
        .collect();
    writeln!(t, "{}", header.join(",")).map_err(out)?;
    for k in 0..run.steps.len() {
        let row: Vec<String> = run.q[k].iter().chain(&run.v[k]).map(|x| format!("{x:e}")).collect();
        writeln!(t, "{},{:e},{}", run.steps[k], run.time(k), row.join(",")).map_err(out)?;
    }
    t.flush().map_err(out)?;
    let mut d = std::io::BufWriter::new(crate::output::create(&dir.join("diagnostics.csv"))?);
    let mut header = vec!["step".to_string(), "t".to_string()];
    for (n, k) in &run.invariants {
        header.push(n.clone());
        header.push(match k {
            InvariantKind::Energy => format!("{n}_error_rel"),
            InvariantKind::Constraint => format!("{n}_residual_abs"),
            InvariantKind::Monitored => format!("{n}_error_abs"),
        });
    }
    writeln!(d, "{}", header.join(",")).map_err(out)?;
    for k in 0..run.steps.len() {
        let mut row = vec![run.steps[k].to_string(), format!("{:e}", run.time(k))];
        for i in 0..run.invariants.len() {
            row.push(format!("{:e}", run.values[k][i]));
            row.push(format!("{:e}", run.error(i, k)));
        }
        writeln!(d, "{}", row.join(",")).map_err(out)?;
    }
    d.flush().map_err(out)
}
