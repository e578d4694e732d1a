//! `hamel sweep`: one run per row of a CSV file of initial states and
//! parameter values, on every core, and one summary row per member.

use std::path::Path;
use std::time::Instant;

use hamel_cli::case::pairs;
use hamel_cli::simulate::RunOptions;
use hamel_cli::{load_model_for, scheme_name, Error};
use hamel_compiler::scheme::Scheme;
use hamel_load::ensemble::MemberError;
use hamel_load::Member;

use super::case::{newton_of, out_dir, steps_of};
use crate::CaseArgs;

pub fn sweep_cmd(case: &CaseArgs, scheme: Scheme, members: &Path, threads: Option<usize>) -> Result<(), Error> {
    if let Some(n) = threads {
        // Refused before anything is compiled or started.
        hamel_load::ensemble::check_threads(n).map_err(|e| Error::Usage(format!("--threads {e}")))?;
    }
    let sizes = pairs::<i64>("--size", &case.sizes)?;
    let params = pairs::<f64>("--set", &case.set)?;
    let steps = steps_of(case)?;
    let newton = newton_of(case)?;
    let model = load_model_for(&case.model, &sizes, &[scheme])?;
    let mut sys = hamel_cli::case::system(&model, scheme, case.backend.into(), &params)?;
    super::case::set_order(&mut sys, case.order)?;
    let state: Vec<(String, Vec<f64>)> = case
        .state
        .iter()
        .map(|o| hamel_load::parse_override(o).map_err(|e| Error::Usage(format!("--state: {e}"))))
        .collect::<Result<_, _>>()?;
    hamel_cli::case::no_repeats("--state", &case.state, state.iter().map(|(n, _)| n.as_str()))?;
    let base = Member {
        init: case.init.clone(),
        state,
        params: Vec::new(),
    };
    let names: Vec<&str> = sys.compiled().params.iter().map(|(n, _)| n.as_str()).collect();
    let members = hamel_load::ensemble::read_members(members, &names, &base)?;
    // Only the summaries are kept: record the first and the last state.
    let opt = RunOptions {
        h: case.h,
        steps,
        compensated: case.compensated,
        record_every: steps.max(1),
        inputs: super::case::inputs_of(case, &sys)?,
        newton,
    };
    // Refused before any member runs, as `simulate` refuses them.
    hamel_load::run::check_run(&sys, &opt).map_err(|e| Error::Usage(hamel_cli::simulate::with_flags(e)))?;
    let started = Instant::now();
    let results = hamel_load::run_many(&sys, &members, &opt, threads)?;
    let wall = started.elapsed().as_secs_f64();
    let c = sys.compiled();
    let dir = out_dir(case, &c.model, &format!("{}-sweep", scheme_name(scheme)))?;
    let mut header = vec![
        "member",
        "ok",
        "steps",
        "max_energy_error_rel",
        "max_constraint_error",
        "max_momentum_error_rel",
        "newton_iterations_mean",
        "message",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    header.extend(c.coordinates.iter().map(|n| format!("final {n}")));
    header.extend(c.velocities.iter().map(|n| format!("final {n}")));
    let mut rows = vec![header.join(",")];
    let (mut failed, mut flagged) = (0usize, 0usize);
    let g = |x: &serde_json::Value| x.as_f64().map(|x| format!("{x:e}")).unwrap_or_default();
    for (i, r) in results.iter().enumerate() {
        let (run, message) = match r {
            Ok(run) => (Some(run), run.warnings().join("; ")),
            Err(MemberError::Run(hamel_load::RunError::Failed(f))) => (Some(&*f.partial), f.message()),
            Err(e) => (None, e.to_string()),
        };
        let ok = r.is_ok() && message.is_empty();
        match (r.is_ok(), ok) {
            (false, _) => failed += 1,
            (true, false) => flagged += 1,
            _ => {}
        }
        let message = message.replace([',', '\n'], ";");
        let mut row = vec![i.to_string(), ok.to_string()];
        match run {
            Some(run) => {
                let s = run.summary(&case.model.display().to_string());
                row.push(run.options.steps.to_string());
                for k in [
                    "max_energy_error_rel",
                    "max_constraint_error",
                    "max_momentum_error_rel",
                    "newton_iterations_mean",
                ] {
                    row.push(g(&s[k]));
                }
                row.push(message);
                let last = run.q.len() - 1;
                row.extend(run.q[last].iter().chain(&run.v[last]).map(|x| format!("{x:e}")));
            }
            None => {
                row.extend(["0", "", "", "", ""].map(String::from));
                row.push(message);
                row.extend(std::iter::repeat_n(
                    String::new(),
                    c.coordinates.len() + c.velocities.len(),
                ));
            }
        }
        rows.push(row.join(","));
    }
    let file = dir.join("sweep.csv");
    hamel_cli::output::write(&file, rows.join("\n") + "\n")?;
    let n = members.len();
    hamel_cli::out!(
        "{} — {}, h = {}, {} steps, {n} member(s) on {} thread(s)",
        c.model,
        c.scheme,
        hamel_cli::num(case.h),
        steps,
        threads.unwrap_or_else(hamel_load::ensemble::cores)
    );
    hamel_cli::out!(
        "{} ok, {flagged} flagged, {failed} failed; {wall:.2} s wall, {:.0} ns per member-step",
        n - failed - flagged,
        wall * 1e9 / (n as f64 * steps.max(1) as f64)
    );
    hamel_cli::out!("wrote {}", file.display());
    if failed + flagged > 0 {
        return Err(Error::Untrustworthy(format!(
            "{} of {n} member(s) failed or were flagged (see the `message` column of {})",
            failed + flagged,
            file.display()
        )));
    }
    Ok(())
}
