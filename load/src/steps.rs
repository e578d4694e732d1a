//! The length of a run from what a user gives: a number of steps, or an end
//! time and the step size. One rule for every host (the CLI's `--steps` /
//! `--t-end`, Python's `steps=` / `t_end=`), so that the same request runs
//! the same number of steps everywhere.

use crate::run::MAX_STEPS;

/// Why a run's length cannot be taken from what was given. The messages
/// name quantities, not a host's spelling of them: hosts say which argument
/// or flag carried the value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LengthError {
    /// the step size is zero, negative or not finite (hosts run forward in
    /// time; a negative step is the runtime's, for library callers)
    #[error("the step size must be a positive finite number (got {0})")]
    StepSize(f64),
    /// neither a number of steps nor an end time
    #[error("give a number of steps or an end time")]
    Neither,
    /// both a number of steps and an end time
    #[error("give a number of steps or an end time, not both")]
    Both,
    /// a number of steps below zero
    #[error("{0} is not a number of steps")]
    NegativeSteps(i128),
    /// an end time that is no number of steps of this size (negative, NaN)
    #[error("an end time of {t_end} is not a number of steps of size {h}")]
    NotSteps {
        /// the end time given
        t_end: f64,
        /// the step size
        h: f64,
    },
    /// more steps than any run can take (see [`MAX_STEPS`])
    #[error("{steps:.1e} steps, more than any run can take (at most {:.0e})", MAX_STEPS as f64)]
    TooMany {
        /// the number of steps asked for
        steps: f64,
    },
}

/// Refuses a step size that is not a positive finite number (the hosts'
/// rule: runs go forward in time).
pub fn check_step_size(h: f64) -> Result<(), LengthError> {
    if h.is_finite() && h > 0.0 {
        Ok(())
    } else {
        Err(LengthError::StepSize(h))
    }
}

/// The number of steps of a run with step size `h`: `steps` if given, or
/// `round(t_end / h)`. Refuses a step size that is not positive and finite,
/// both or neither of `steps` and `t_end`, negative counts and times, and
/// more than [`MAX_STEPS`] steps.
pub fn step_count(h: f64, steps: Option<i128>, t_end: Option<f64>) -> Result<u64, LengthError> {
    check_step_size(h)?;
    let n = match (steps, t_end) {
        (Some(_), Some(_)) => return Err(LengthError::Both),
        (None, None) => return Err(LengthError::Neither),
        (Some(n), None) if n < 0 => return Err(LengthError::NegativeSteps(n)),
        (Some(n), None) => n as f64,
        (None, Some(t)) => {
            let n = (t / h).round();
            if !(n.is_finite() && n >= 0.0) {
                return Err(LengthError::NotSteps { t_end: t, h });
            }
            n
        }
    };
    if n > MAX_STEPS as f64 {
        return Err(LengthError::TooMany { steps: n });
    }
    // Exact: `n` is an integer of at most 2^53 or a given integer below MAX_STEPS.
    Ok(match steps {
        Some(s) => s as u64,
        None => n as u64,
    })
}

/// A likely cause of a step that is not finite from the start, when one
/// is cheap to see: a step size or a parameter so large (or so small) that
/// the step's arithmetic overflows. `None` when nothing stands out.
pub fn non_finite_hint(sys: &crate::System, h: f64) -> Option<String> {
    const HUGE: f64 = 1e100;
    if h.abs() > HUGE {
        return Some(format!(
            "the step size h = {h:e} is so large that the step's arithmetic overflows; reduce it"
        ));
    }
    let c = sys.compiled();
    let odd: Vec<String> = c
        .params
        .iter()
        .zip(sys.parameters_vec())
        .filter(|(_, v)| v.abs() > HUGE || (*v != 0.0 && v.abs() < 1.0 / HUGE))
        .map(|((n, _), v)| format!("{n} = {v:e}"))
        .collect();
    (!odd.is_empty()).then(|| {
        format!(
            "parameter(s) {} are beyond what the step's arithmetic can square or invert in double precision; give values of a reasonable magnitude (change units)",
            odd.join(", ")
        )
    })
}

/// A likely cause of a run whose first step is not finite, for the message
/// every host shows: a step size or parameter beyond double precision
/// ([`non_finite_hint`]), an input so large at `t = 0` that the step
/// overflows, or a force component that is not finite at the initial state
/// `start` (such as `u / th` at `th = 0`), named. `None` when nothing stands out.
pub fn first_step_hint(
    model: &hamel_compiler::Model,
    sys: &crate::System,
    start: &hamel_runtime::DynState,
    opt: &crate::RunOptions,
) -> Option<String> {
    non_finite_hint(sys, opt.h)
        .or_else(|| input_hint(sys, opt))
        .or_else(|| force_hint(model, sys, start, opt))
}

/// Names an input so large at `t = 0` that the first step overflows.
fn input_hint(sys: &crate::System, opt: &crate::RunOptions) -> Option<String> {
    let c = sys.compiled();
    let names: Vec<&str> = c.inputs.iter().map(String::as_str).collect();
    let mut u = vec![0.0; names.len()];
    opt.inputs.as_ref()?.at(&names, 0.0, opt.h, &mut u).ok()?;
    let (i, x) = u.iter().enumerate().find(|(_, x)| x.abs() > 1e100)?;
    Some(format!(
        "input `{}` = {x:e} at t = 0 is so large that the step's arithmetic overflows; give a value of a reasonable magnitude",
        names[i]
    ))
}

/// Names a force component that is not finite at the initial state (such
/// as `u / th` at `th = 0`), evaluated from the model's expressions with the
/// run's parameters and the inputs at `t = 0`.
fn force_hint(
    model: &hamel_compiler::Model,
    sys: &crate::System,
    start: &hamel_runtime::DynState,
    opt: &crate::RunOptions,
) -> Option<String> {
    use hamel_compiler::sym::graph::Node;
    let force = model.force.as_ref()?;
    let (q, v) = sys.physical(&start.z, 0).ok()?;
    let c = sys.compiled();
    let mut u = vec![0.0; c.inputs.len()];
    if let Some(s) = &opt.inputs {
        let names: Vec<&str> = c.inputs.iter().map(String::as_str).collect();
        s.at(&names, 0.0, opt.h, &mut u).ok()?;
    }
    let g = &model.graph;
    let mut values: std::collections::HashMap<u32, f64> = Default::default();
    let mut set = |id: hamel_compiler::sym::Id, x: f64| {
        if let Node::Sym(k) = g.node(id) {
            values.insert(*k, x);
        }
    };
    for (s, x) in model.coords.iter().zip(&q) {
        set(s.sym, *x);
    }
    for (s, x) in model.vels.iter().zip(&v) {
        set(s.sym, *x);
    }
    for (s, x) in model.inputs.iter().zip(&u) {
        set(s.sym, *x);
    }
    for (p, x) in model.params.iter().zip(sys.parameters_vec()) {
        set(p.sym, x);
    }
    set(model.time, 0.0);
    let at = |k: u32| values.get(&k).copied().unwrap_or(f64::NAN);
    let (i, x) = force
        .iter()
        .map(|&f| g.eval(f, &at))
        .enumerate()
        .find(|(_, x)| !x.is_finite())?;
    let state: Vec<String> = c
        .coordinates
        .iter()
        .zip(&q)
        .chain(c.velocities.iter().zip(&v))
        .map(|(n, x)| format!("{n} = {x}"))
        .collect();
    Some(format!(
        "the force on `{}` is {x} at the initial state ({}): a division by zero or a function outside its domain there",
        model.vels.get(i).map_or("?", |s| s.name.as_str()),
        state.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_rounds_t_end_over_h_and_refuses_what_is_no_run() {
        assert_eq!(step_count(0.1, None, Some(1.0)), Ok(10));
        // 0.3 / 0.1 = 2.9999999999999996: rounded, not truncated
        assert_eq!(step_count(0.1, None, Some(0.3)), Ok(3));
        assert_eq!(step_count(0.1, Some(7), None), Ok(7));
        assert_eq!(step_count(0.1, Some(0), None), Ok(0));
        assert_eq!(step_count(0.0, Some(1), None), Err(LengthError::StepSize(0.0)));
        assert_eq!(step_count(-0.1, Some(1), None), Err(LengthError::StepSize(-0.1)));
        assert!(matches!(
            step_count(f64::NAN, Some(1), None),
            Err(LengthError::StepSize(_))
        ));
        assert_eq!(step_count(0.1, Some(-5), None), Err(LengthError::NegativeSteps(-5)));
        assert_eq!(step_count(0.1, Some(1), Some(1.0)), Err(LengthError::Both));
        assert_eq!(step_count(0.1, None, None), Err(LengthError::Neither));
        assert!(matches!(
            step_count(0.2, None, Some(-30.0)),
            Err(LengthError::NotSteps { .. })
        ));
        assert!(matches!(
            step_count(0.2, None, Some(f64::NAN)),
            Err(LengthError::NotSteps { .. })
        ));
        let e = step_count(1e-300, None, Some(1.0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1.0e300 steps, more than any run can take (at most 1e15)"
        );
        assert!(matches!(
            step_count(1.0, Some(i128::from(u64::MAX)), None),
            Err(LengthError::TooMany { .. })
        ));
    }
}
