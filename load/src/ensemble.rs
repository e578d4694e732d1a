//! Ensembles: many runs of one compiled step, differing in initial state or
//! parameter values, on every core (rayon). Results come back in the order
//! of the members; a member that fails is reported without losing the others.

use std::sync::Mutex;

use rayon::prelude::*;

use crate::initial::initial;
use crate::run::{run, Run, RunError, RunOptions};
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

/// Why one member did not produce a run.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// a bad parameter or initial state
    #[error(transparent)]
    Input(#[from] LoadError),
    /// the run failed (the run up to the failure is inside)
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Runs every member with the options `opt`, on `threads` threads (default:
/// rayon's, one per core). Each thread steps its own clone of `sys` (the
/// native code is shared), so the results equal those of one-by-one runs to
/// the bit, whatever the number of threads.
pub fn run_many(
    sys: &System,
    members: &[Member],
    opt: &RunOptions,
    threads: Option<usize>,
) -> Result<Vec<Result<Run, MemberError>>, LoadError> {
    let defaults = sys.parameters_vec();
    let proto = Mutex::new(sys.clone());
    let clone = || proto.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let one = |s: &mut System, m: &Member| -> Result<Run, MemberError> {
        s.set_param_values(&defaults).map_err(LoadError::Usage)?;
        for (name, value) in &m.params {
            s.set_param(name, *value).map_err(LoadError::Usage)?;
        }
        let (state, label) = initial(s, m.init.as_deref(), &m.state)?;
        Ok(run(s, state, label, opt)?)
    };
    let go = || members.par_iter().map_init(clone, one).collect();
    match threads {
        None => Ok(go()),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| LoadError::Usage(format!("cannot start {n} threads: {e}")))
            .map(|pool| pool.install(go)),
    }
}
