//! One case to run: a model file, sizes, parameter values, a scheme and an
//! initial state, as given on the command line.

use std::path::Path;

use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;
use hamel_runtime::DynState;

use crate::{compile, Backend, Error, System};

/// Parses `NAME=VALUE` pairs (`--set m=2`, `--size N=4`).
pub fn pairs<T: std::str::FromStr>(flag: &str, items: &[String]) -> Result<Vec<(String, T)>, Error>
where
    T::Err: std::fmt::Display,
{
    let out: Vec<(String, T)> = items
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
        .collect::<Result<_, Error>>()?;
    no_repeats(flag, items, out.iter().map(|(n, _)| n.as_str()))?;
    Ok(out)
}

/// Refuses a name given twice to a repeatable flag (`--size N=3 --size N=4`):
/// neither value would be right to drop without a word. `items` are the
/// flag's arguments, `names` their names, in the same order.
pub fn no_repeats<'a>(flag: &str, items: &[String], names: impl Iterator<Item = &'a str>) -> Result<(), Error> {
    let mut seen: Vec<&str> = Vec::new();
    for (i, n) in names.enumerate() {
        if let Some(j) = seen.iter().position(|m| *m == n) {
            return Err(Error::Usage(format!(
                "{flag} gives `{n}` twice ({flag} {} and {flag} {}); give each name once",
                items[j], items[i]
            )));
        }
        seen.push(n);
    }
    Ok(())
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
/// replaced by `--state VAR=V1,V2,…` (see [`hamel_load::initial()`]). Returns
/// the state and the name used.
pub fn initial(
    sys: &System,
    file: &Path,
    init: Option<&str>,
    overrides: &[String],
) -> Result<(DynState, Option<String>), Error> {
    let parsed = overrides
        .iter()
        .map(|o| hamel_load::parse_override(o).map_err(|e| Error::Usage(format!("--state: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    no_repeats("--state", overrides, parsed.iter().map(|(n, _)| n.as_str()))?;
    hamel_load::initial(sys, init, &parsed).map_err(|e| match e {
        hamel_load::LoadError::Usage(m) if !overrides.is_empty() && m.starts_with("state") => {
            Error::Usage(format!("--{m}"))
        }
        hamel_load::LoadError::Usage(m) => Error::Usage(format!("{}: {m}", file.display())),
        e => e.into(),
    })
}
