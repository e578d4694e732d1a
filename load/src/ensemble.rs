//! Ensembles: many runs of one compiled step, differing in initial state or
//! parameter values, on every core (rayon). Results come back in the order
//! of the members; a member that fails is reported without losing the others.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::initial::initial;
use crate::run::{run_until, Run, RunError, RunOptions};
use crate::table::Table;
use crate::{LoadError, System};

/// One member of an ensemble: an initial state and parameter values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Member {
    /// named initial state of the model file (default: the file's first)
    pub init: Option<String>,
    /// components replaced in that state (see [`crate::initial::Overrides`])
    pub state: Vec<(String, Vec<f64>)>,
    /// parameters changed from the system's values (struct-field spelling)
    pub params: Vec<(String, f64)>,
}

/// Reads ensemble members from a CSV file (see [`members_of`]).
pub fn read_members(path: &std::path::Path, params: &[&str], base: &Member) -> Result<Vec<Member>, LoadError> {
    members_of(&Table::read(path).map_err(LoadError::Usage)?, params, base)
}

/// The members of a table: a header row naming columns, one member per
/// row, each starting from `base`. A column is `init` (a named initial
/// state), a parameter of the model (one of `params`), or a coordinate or
/// velocity component (`th`, `x[1]`, `th'`); an empty cell keeps the
/// default. Errors name the file, line and column.
pub fn members_of(table: &Table, params: &[&str], base: &Member) -> Result<Vec<Member>, LoadError> {
    let mut members = Vec::new();
    for (line, cells) in &table.rows {
        let mut m = base.clone();
        for (j, (col, cell)) in table.columns.iter().zip(cells).enumerate() {
            if cell.is_empty() {
                continue;
            }
            if col == "init" {
                m.init = Some(cell.to_string());
                continue;
            }
            let x = table.number(*line, j, cell).map_err(LoadError::Usage)?;
            if params.contains(&col.as_str()) {
                m.params.push((col.to_string(), x));
            } else {
                m.state.push((col.to_string(), vec![x]));
            }
        }
        members.push(m);
    }
    if members.is_empty() {
        return Err(LoadError::Usage(format!(
            "`{}`: no members (rows after the header)",
            table.file
        )));
    }
    Ok(members)
}

/// Why one member did not produce a run.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// a bad parameter or initial state
    #[error(transparent)]
    Input(#[from] LoadError),
    /// the run failed (the run up to the failure is inside)
    #[error(transparent)]
    Run(#[from] RunError),
    /// the member's run panicked (a bug: the message says where); the other
    /// members are unaffected
    #[error("this member's run stopped on an internal error (please report it): {0}")]
    Panicked(String),
}

/// Most threads an ensemble may ask for, as a multiple of the cores the
/// machine has: more only adds switching (and a million threads take a
/// minute to start before failing).
pub const THREADS_PER_CORE: usize = 4;

/// The cores of this machine (1 if unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuses a thread count of 0 or above [`THREADS_PER_CORE`] × [`cores`],
/// before any thread is started.
pub fn check_threads(threads: usize) -> Result<(), LoadError> {
    let most = THREADS_PER_CORE * cores();
    if threads == 0 || threads > most {
        return Err(LoadError::Usage(format!(
            "{threads} threads: give 1 to {most} ({THREADS_PER_CORE} per core; this machine has {})",
            cores()
        )));
    }
    Ok(())
}

/// Runs one member, its panic (a bug) turned into its failure
/// ([`MemberError::Panicked`]), not the ensemble's.
pub fn isolate<T>(member: impl FnOnce() -> Result<T, MemberError>) -> Result<T, MemberError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(member))
        .unwrap_or_else(|p| Err(MemberError::Panicked(panic_message(&*p))))
}

/// The message of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs every member with the options `opt`, on `threads` threads (default:
/// rayon's, one per core; refused beyond [`check_threads`]'s bound). Each
/// thread steps its own clone of `sys` (the native code is shared), so the
/// results equal those of one-by-one runs to the bit, whatever the number of
/// threads. A member whose run panics is reported as
/// [`MemberError::Panicked`], the others run on.
pub fn run_many(
    sys: &System,
    members: &[Member],
    opt: &RunOptions,
    threads: Option<usize>,
) -> Result<Vec<Result<Run, MemberError>>, LoadError> {
    run_many_until(sys, members, opt, threads, &AtomicBool::new(false))
}

/// [`run_many`] that a host can stop by setting `stop` (a Ctrl-C): runs under
/// way end within 256 steps, with [`Run::stopped`] set, and members not
/// started yet come back as runs of 0 steps, stopped.
pub fn run_many_until(
    sys: &System,
    members: &[Member],
    opt: &RunOptions,
    threads: Option<usize>,
    stop: &AtomicBool,
) -> Result<Vec<Result<Run, MemberError>>, LoadError> {
    if let Some(n) = threads {
        check_threads(n)?;
    }
    let defaults = sys.parameters_vec();
    let proto = Mutex::new(sys.clone());
    let clone = || proto.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let one = |s: &mut System, m: &Member| -> Result<Run, MemberError> {
        s.set_param_values(&defaults).map_err(LoadError::Usage)?;
        for (name, value) in &m.params {
            s.set_param(name, *value).map_err(LoadError::Usage)?;
        }
        let (state, label) = initial(s, m.init.as_deref(), &m.state)?;
        let go_on = &mut |_| !stop.load(Ordering::Relaxed);
        // A member not started when the host stopped: its initial state only.
        let before = stop.load(Ordering::Relaxed);
        let short;
        let opt = if before {
            short = RunOptions {
                steps: 0,
                ..opt.clone()
            };
            &short
        } else {
            opt
        };
        let mut run = run_until(s, state, label, opt, 0, None, go_on)?;
        run.stopped |= before;
        Ok(run)
    };
    let isolated = |s: &mut System, m: &Member| isolate(|| one(s, m));
    let go = || members.par_iter().map_init(clone, isolated).collect();
    match threads {
        None => Ok(go()),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| LoadError::Usage(format!("cannot start {n} threads: {e}")))
            .map(|pool| pool.install(go)),
    }
}
