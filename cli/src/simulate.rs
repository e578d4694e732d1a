//! Runs from the command line: [`hamel_load::run()`] with a progress bar on a
//! terminal, and the run's CSV files.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
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
    run_to(sys, state, initial, opt, progress, None)
}

/// [`run`], writing every recorded state into `dir`'s CSV files as it comes
/// (see [`CsvSink`]) and keeping only about 20,000 of them in memory (for
/// plots and summaries). The files are complete up to a failed step.
pub fn run_into(
    sys: &System,
    state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    dir: &Path,
) -> Result<Run, Error> {
    let mut sink = CsvSink::create(sys, dir, opt.h)?;
    let result = run_to(sys, state, initial, opt, true, Some(&mut sink));
    sink.finish()?;
    result
}

fn run_to(
    sys: &System,
    state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    progress: bool,
    sink: Option<&mut CsvSink>,
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
    // Ctrl-C stops the run where it is; the caller writes what it holds.
    let mut go_on = |k: u64| {
        tick(k);
        !crate::interrupt::requested()
    };
    let result = match sink {
        None => hamel_load::run::run_until(sys, state, initial, opt, 0, None, &mut go_on),
        Some(sink) => {
            let keep = opt.steps.div_ceil(20_000).max(1);
            hamel_load::run::run_until(
                sys,
                state,
                initial,
                opt,
                keep,
                Some(sink as &mut dyn hamel_load::run::Sink),
                &mut go_on,
            )
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.map_err(|e| match e {
        hamel_load::RunError::Start(e) => Error::Step(e),
        e @ (hamel_load::RunError::TooLarge(_) | hamel_load::RunError::Options(_)) => Error::Usage(with_flags(e)),
        hamel_load::RunError::Failed(f) => Error::RunFailed {
            error: f.error,
            partial: f.partial,
        },
    })
}

/// The message of a refused run, with the flag that changes it named (the
/// library's messages name no flags).
pub fn with_flags(e: hamel_load::RunError) -> String {
    match e {
        hamel_load::RunError::TooLarge(m) if m.contains("records") => format!("{m} (--every N records one state in N)"),
        e => e.to_string(),
    }
}

/// Writes `trajectory.csv` and `diagnostics.csv` (the same files as
/// [`write_csv`]) row by row while a run goes on.
pub struct CsvSink {
    h: f64,
    kinds: Vec<InvariantKind>,
    initial: Option<Vec<f64>>,
    trajectory: std::io::BufWriter<std::fs::File>,
    diagnostics: std::io::BufWriter<std::fs::File>,
    dir: PathBuf,
}

impl CsvSink {
    /// Creates both files in `dir` (claimed by the caller) and writes their headers.
    pub fn create(sys: &System, dir: &Path, h: f64) -> Result<CsvSink, Error> {
        let out = Error::writing(dir);
        std::fs::create_dir_all(dir).map_err(out)?;
        let c = sys.compiled();
        let mut t = std::io::BufWriter::new(crate::output::create(&dir.join("trajectory.csv"))?);
        let header: Vec<&str> = ["step", "t"]
            .into_iter()
            .chain(c.coordinates.iter().map(String::as_str))
            .chain(c.velocities.iter().map(String::as_str))
            .chain(c.inputs.iter().map(String::as_str))
            .collect();
        writeln!(t, "{}", header.join(",")).map_err(out)?;
        let info: Vec<(String, InvariantKind)> = hamel_load::run::monitored(sys);
        let mut d = std::io::BufWriter::new(crate::output::create(&dir.join("diagnostics.csv"))?);
        writeln!(d, "{}", diagnostics_header(&info).join(",")).map_err(out)?;
        Ok(CsvSink {
            h,
            kinds: info.iter().map(|(_, k)| *k).collect(),
            initial: None,
            trajectory: t,
            diagnostics: d,
            dir: dir.to_path_buf(),
        })
    }

    /// Flushes both files.
    pub fn finish(mut self) -> Result<(), Error> {
        let out = Error::writing(&self.dir);
        self.trajectory.flush().map_err(out)?;
        self.diagnostics.flush().map_err(out)
    }
}

impl hamel_load::run::Sink for CsvSink {
    fn record(&mut self, step: u64, q: &[f64], v: &[f64], values: &[f64], u: &[f64]) -> Result<(), String> {
        let e = |e: std::io::Error| format!("cannot write into `{}`: {e}", self.dir.display());
        let t = step as f64 * self.h;
        let row: Vec<String> = q.iter().chain(v).chain(u).map(|x| format!("{x:e}")).collect();
        writeln!(self.trajectory, "{step},{t:e},{}", row.join(",")).map_err(e)?;
        let v0 = self.initial.get_or_insert_with(|| values.to_vec());
        let mut row = vec![step.to_string(), format!("{t:e}")];
        for (i, &x) in values.iter().enumerate() {
            row.push(format!("{x:e}"));
            row.push(format!("{:e}", hamel_load::run::error_of(self.kinds[i], x, v0[i])));
        }
        writeln!(self.diagnostics, "{}", row.join(",")).map_err(e)
    }
}

/// The diagnostics file's header: each quantity and its error column.
fn diagnostics_header(info: &[(String, InvariantKind)]) -> Vec<String> {
    let mut header = vec!["step".to_string(), "t".to_string()];
    for (n, k) in info {
        header.push(n.clone());
        header.push(match k {
            InvariantKind::Energy => format!("{n}_error_rel"),
            k if k.is_residual() => format!("{n}_residual_abs"),
            _ => format!("{n}_error_abs"),
        });
    }
    header
}

/// Writes `trajectory.csv` (step, t, q, ξ, and the inputs u of the step from each state) and `diagnostics.csv` (step, t,
/// each quantity and its error) of `run` into `dir`.
pub fn write_csv(run: &Run, dir: &Path) -> Result<(), Error> {
    let out = Error::writing(dir);
    std::fs::create_dir_all(dir).map_err(out)?;
    let mut t = std::io::BufWriter::new(crate::output::create(&dir.join("trajectory.csv"))?);
    let header: Vec<String> = ["step".to_string(), "t".to_string()]
        .into_iter()
        .chain(run.coordinates.iter().cloned())
        .chain(run.velocities.iter().cloned())
        .chain(run.input_names.iter().cloned())
        .collect();
    writeln!(t, "{}", header.join(",")).map_err(out)?;
    for k in 0..run.steps.len() {
        let row: Vec<String> = run.q[k]
            .iter()
            .chain(&run.v[k])
            .chain(&run.u[k])
            .map(|x| format!("{x:e}"))
            .collect();
        writeln!(t, "{},{:e},{}", run.steps[k], run.time(k), row.join(",")).map_err(out)?;
    }
    t.flush().map_err(out)?;
    let mut d = std::io::BufWriter::new(crate::output::create(&dir.join("diagnostics.csv"))?);
    let header = diagnostics_header(&run.invariants);
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
