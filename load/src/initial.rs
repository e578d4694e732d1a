//! Initial states as users give them: a named state of the model file, with
//! some components replaced (`th = 0.3`, `x = [1, 0, 0]`, `x[1] = 0.5`).

use hamel_runtime::{DynState, Kernels};

use crate::{LoadError, System};

/// Components replaced in an initial state: a coordinate or velocity as
/// written in the model (`th`, `q'` for identity-frame velocities), a whole
/// vector `x` (all its components, in order) or one component `x[1]`.
pub type Overrides = [(String, Vec<f64>)];

/// Parses `VAR=V1,V2,…` (the command line's `--state`).
pub fn parse_override(text: &str) -> Result<(String, Vec<f64>), LoadError> {
    let (var, values) = text
        .split_once('=')
        .ok_or_else(|| LoadError::Usage(format!("state `{text}`: expected VAR=V1,V2,…")))?;
    let values = values
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .map_err(|e| LoadError::Usage(format!("state `{text}`: `{}` is not a number ({e})", s.trim())))
        })
        .collect::<Result<_, _>>()?;
    Ok((var.trim().to_string(), values))
}

/// The initial state: the named one (or the file's first), with the
/// components `overrides` name replaced; without a named state every
/// coordinate and velocity must be given. Returns the state and its label
/// (the name, `name (modified)`, or none).
pub fn initial(
    sys: &System,
    init: Option<&str>,
    overrides: &Overrides,
) -> Result<(DynState, Option<String>), LoadError> {
    let c = sys.compiled();
    let name = match init {
        Some(n) => Some(n.to_string()),
        None => c.initials.first().cloned(),
    };
    let (mut q, mut v) = match &name {
        Some(n) => sys.initial_conditions(n).ok_or_else(|| {
            LoadError::Usage(format!(
                "model `{}` has no initial state `{n}` (it has: {})",
                c.model,
                if c.initials.is_empty() {
                    "none".to_string()
                } else {
                    c.initials.join(", ")
                }
            ))
        })?,
        None if overrides.is_empty() => {
            return Err(LoadError::Usage(format!(
                "model `{}` has no named initial state; give a value for every coordinate and velocity",
                c.model
            )))
        }
        None => (vec![f64::NAN; c.coordinates.len()], vec![f64::NAN; c.velocities.len()]),
    };
    // Name of component `i` of (q, ξ).
    let component = |i: usize| {
        c.coordinates
            .iter()
            .chain(&c.velocities)
            .nth(i)
            .cloned()
            .unwrap_or_default()
    };
    if let Some(n) = &name {
        // A named state that evaluates to NaN is the model's (or the
        // parameters') doing, not a missing value.
        if let Some(i) = q.iter().chain(&v).position(|x| !x.is_finite()) {
            return Err(LoadError::Usage(format!(
                "initial state `{n}` of model `{}` gives {} = {} with these parameter values",
                c.model,
                component(i),
                q.iter().chain(&v).nth(i).copied().unwrap_or(f64::NAN)
            )));
        }
    }
    for (var, values) in overrides {
        let var = var.as_str();
        // A whole vector `x` has components `x[0]`, `x[1]`, …; a scalar is itself.
        let targets = |names: &[String]| -> Vec<usize> {
            let exact: Vec<usize> = (0..names.len()).filter(|&i| names[i] == var).collect();
            if !exact.is_empty() {
                return exact;
            }
            (0..names.len())
                .filter(|&i| {
                    names[i]
                        .strip_prefix(var)
                        .is_some_and(|rest| rest.starts_with('[') && rest.matches('[').count() == 1)
                })
                .collect()
        };
        let (tq, tv) = (targets(&c.coordinates), targets(&c.velocities));
        let (dst, ix) = if !tq.is_empty() { (&mut q, tq) } else { (&mut v, tv) };
        if ix.is_empty() {
            let known: Vec<&str> = c.coordinates.iter().chain(&c.velocities).map(|s| s.as_str()).collect();
            return Err(LoadError::Usage(format!(
                "state `{var}`: model `{}` has no coordinate or velocity `{var}` (components: {})",
                c.model,
                known.join(", ")
            )));
        }
        if ix.len() != values.len() {
            return Err(LoadError::Usage(format!(
                "state `{var}`: it has {} component(s), {} value(s) given",
                ix.len(),
                values.len()
            )));
        }
        if let Some(x) = values.iter().find(|x| !x.is_finite()) {
            return Err(LoadError::Usage(format!("state `{var}`: {x} is not finite")));
        }
        for (&i, &x) in ix.iter().zip(values) {
            dst[i] = x;
        }
    }
    if let Some(i) = q.iter().chain(&v).position(|x| x.is_nan()) {
        return Err(LoadError::Usage(format!("state: no value for `{}`", component(i))));
    }
    let label = match (&name, overrides.is_empty()) {
        (Some(n), true) => Some(n.clone()),
        (Some(n), false) => Some(format!("{n} (modified)")),
        (None, _) => None,
    };
    let at = label.as_ref().map_or("the initial state given".to_string(), |l| {
        format!("initial state `{l}`")
    });
    if let Some(why) = sys.frame_diagnosis(&q, &v) {
        return Err(LoadError::Usage(format!("model `{}`: at {at}: {why}", c.model)));
    }
    if let Some(why) = sys.metric_diagnosis(&q, &v) {
        return Err(LoadError::Usage(format!(
            "model `{}`: at {at} the kinetic metric (with the constraints) is singular, so the velocities are not determined: {why}",
            c.model
        )));
    }
    let state = sys.initial_state(&q, &v).map_err(LoadError::State)?;
    Ok((state, label))
}
