//! One case to run: a model file, sizes, parameter values, a scheme and an
//! initial state, as given on the command line.

use std::path::Path;

use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;
use hamel_runtime::{DynState, Kernels};

use crate::{compile, Backend, Error, System};

/// Parses `NAME=VALUE` pairs (`--set m=2`, `--size N=4`).
pub fn pairs<T: std::str::FromStr>(flag: &str, items: &[String]) -> Result<Vec<(String, T)>, Error>
where
    T::Err: std::fmt::Display,
{
    items
        .iter()
        .map(|s| {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("{flag} {s}: expected NAME=VALUE")))?;
            let v = value
                .trim()
                .parse::<T>()
                .map_err(|e| Error::Usage(format!("{flag} {s}: `{}` is not a valid value ({e})", value.trim())))?;
            Ok((name.trim().to_string(), v))
        })
        .collect()
}

/// A compiled scheme with parameters set.
pub fn system(model: &Model, scheme: Scheme, backend: Backend, params: &[(String, f64)]) -> Result<System, Error> {
    let mut sys = compile(model, scheme, backend)?;
    for (name, value) in params {
        sys.set_param(name, *value).map_err(Error::Usage)?;
    }
    Ok(sys)
}

/// The initial state: the named one (or the file's first), with components
/// replaced by `--state VAR=V1,V2,…` (VAR a coordinate or velocity as written
/// in the model, `x` for a whole vector or `x[1]` for one component, `q'` for
/// identity-frame velocities). Returns the state and the name used.
pub fn initial(
    sys: &System,
    file: &Path,
    init: Option<&str>,
    overrides: &[String],
) -> Result<(DynState, Option<String>), Error> {
    let c = sys.compiled();
    let name = match init {
        Some(n) => Some(n.to_string()),
        None => c.initials.first().cloned(),
    };
    let (mut q, mut v) = match &name {
        Some(n) => sys.initial_conditions(n).ok_or_else(|| {
            Error::Usage(format!(
                "{}: model `{}` has no initial state `{n}` (it has: {})",
                file.display(),
                c.model,
                if c.initials.is_empty() {
                    "none".to_string()
                } else {
                    c.initials.join(", ")
                }
            ))
        })?,
        None if overrides.is_empty() => {
            return Err(Error::Usage(format!(
            "{}: model `{}` has no named initial state; give one with --state VAR=… for every coordinate and velocity",
            file.display(),
            c.model
        )))
        }
        None => (vec![f64::NAN; c.coordinates.len()], vec![f64::NAN; c.velocities.len()]),
    };
    for o in overrides {
        let (var, values) = o
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--state {o}: expected VAR=V1,V2,…")))?;
        let var = var.trim();
        let values: Vec<f64> = values
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<f64>()
                    .map_err(|e| Error::Usage(format!("--state {o}: `{}` is not a number ({e})", s.trim())))
            })
            .collect::<Result<_, _>>()?;
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
            return Err(Error::Usage(format!(
                "--state {o}: model `{}` has no coordinate or velocity `{var}` (components: {})",
                c.model,
                known.join(", ")
            )));
        }
        if ix.len() != values.len() {
            return Err(Error::Usage(format!(
                "--state {o}: `{var}` has {} component(s), {} value(s) given",
                ix.len(),
                values.len()
            )));
        }
        for (i, x) in ix.into_iter().zip(values) {
            dst[i] = x;
        }
    }
    if let Some(i) = q.iter().chain(&v).position(|x| x.is_nan()) {
        let n = c
            .coordinates
            .iter()
            .chain(&c.velocities)
            .nth(i)
            .cloned()
            .unwrap_or_default();
        return Err(Error::Usage(format!("--state: no value for `{n}`")));
    }
    let state = sys.initial_state(&q, &v)?;
    let label = match (&name, overrides.is_empty()) {
        (Some(n), true) => Some(n.clone()),
        (Some(n), false) => Some(format!("{n} (modified)")),
        (None, _) => None,
    };
    Ok((state, label))
}
