//! Input schedules: the control inputs `u_k` a run applies at each step.
//!
//! Two conventions (docs/schemes.md §8): a table is a zero-order hold (`u_k`
//! is the last row at or before `t_k`, as DMOC and discrete LQR assume); a
//! function of time is sampled at the step's midpoint `t_k + h/2`, which keeps
//! the schemes second order (sampling at `t_k` makes them first order).

use std::path::Path;

use hamel_compiler::sym::{Graph, Id};

/// How one input component varies.
#[derive(Clone, Debug)]
enum Component {
    /// a function of time, sampled at the step's midpoint
    Function(Graph, Id),
    /// held from each time of `times` on: `values[j]` from `times[j]`
    Table(Vec<f64>, Vec<f64>),
    /// one value per step (the last one held past the end)
    Steps(Vec<f64>),
}

/// The inputs of a run, one component per model input.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    components: Vec<(String, Component)>,
}

impl Schedule {
    /// Component values written `name=expression` (constants or functions of
    /// `t` in the model language, e.g. `tau=2` or `u1=0.5*sin(t)`), for a
    /// model with inputs `names`; inputs not given are zero.
    pub fn from_assignments(names: &[&str], items: &[String]) -> Result<Schedule, String> {
        let mut s = Schedule::default();
        for item in items {
            let (name, expr) = item
                .split_once('=')
                .ok_or_else(|| format!("--input `{item}`: expected `name=value` or `name=expression in t`"))?;
            let name = name.trim();
            check_name(names, name)?;
            let (g, root) =
                hamel_compiler::model::time_function(expr.trim()).map_err(|e| format!("--input `{item}`: {e}"))?;
            s.set(name, Component::Function(g, root))?;
        }
        Ok(s)
    }

    /// A CSV table with a column `t` (ascending) and one column per input it
    /// sets (other columns are refused); held between rows, the first row from
    /// `t = −∞`. `#` starts a comment line.
    pub fn from_csv(names: &[&str], path: &Path) -> Result<Schedule, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let at = |line: usize| format!("{}:{line}", path.display());
        let mut rows = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (hl, header) = rows.next().ok_or_else(|| format!("`{}` is empty", path.display()))?;
        let cols: Vec<&str> = header.split(',').map(str::trim).collect();
        let t_col = cols
            .iter()
            .position(|c| *c == "t")
            .ok_or_else(|| format!("{}: the header needs a column `t`", at(hl)))?;
        for (j, c) in cols.iter().enumerate() {
            if j != t_col {
                check_name(names, c).map_err(|e| format!("{}: {e}", at(hl)))?;
            }
        }
        let mut times = Vec::new();
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); cols.len()];
        for (ln, line) in rows {
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != cols.len() {
                return Err(format!(
                    "{}: {} cells, the header has {}",
                    at(ln),
                    cells.len(),
                    cols.len()
                ));
            }
            for (j, c) in cells.iter().enumerate() {
                let x: f64 = c
                    .parse()
                    .ok()
                    .filter(|x: &f64| x.is_finite())
                    .ok_or_else(|| format!("{}: `{c}` is not a finite number", at(ln)))?;
                values[j].push(x);
            }
            let t = values[t_col][values[t_col].len() - 1];
            if times.last().is_some_and(|&p| t <= p) {
                return Err(format!("{}: times must increase (t = {t})", at(ln)));
            }
            times.push(t);
        }
        if times.is_empty() {
            return Err(format!("`{}` has a header but no rows", path.display()));
        }
        let mut s = Schedule::default();
        for (j, c) in cols.iter().enumerate() {
            if j != t_col {
                s.set(c, Component::Table(times.clone(), values[j].clone()))?;
            }
        }
        Ok(s)
    }

    /// One row of inputs per step (`rows[k]` over step `k`, in the order of
    /// `names`; the last row is held past the end).
    pub fn per_step(names: &[&str], rows: &[Vec<f64>]) -> Result<Schedule, String> {
        if rows.is_empty() {
            return Err("an input array needs at least one row".into());
        }
        if let Some(r) = rows.iter().find(|r| r.len() != names.len()) {
            return Err(format!(
                "an input row has {} value(s); the model has {} input(s) ({})",
                r.len(),
                names.len(),
                names.join(", ")
            ));
        }
        let mut s = Schedule::default();
        for (i, n) in names.iter().enumerate() {
            s.set(n, Component::Steps(rows.iter().map(|r| r[i]).collect()))?;
        }
        Ok(s)
    }

    fn set(&mut self, name: &str, c: Component) -> Result<(), String> {
        if self.components.iter().any(|(n, _)| n == name) {
            return Err(format!("input `{name}` is given twice"));
        }
        self.components.push((name.to_string(), c));
        Ok(())
    }

    /// Whether no input is set (all zero).
    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }

    /// The inputs `u_k` of the step from `t_k` with step size `h`, in the
    /// order of `names`, into `out`. Fails on a non-finite value.
    pub fn at(&self, names: &[&str], t_k: f64, h: f64, out: &mut [f64]) -> Result<(), String> {
        out.fill(0.0);
        for (name, c) in &self.components {
            let Some(i) = names.iter().position(|n| n == name) else {
                continue;
            };
            let x = match c {
                Component::Function(g, root) => {
                    let t = t_k + 0.5 * h;
                    g.eval(*root, &|s| if g.symbol_name(s) == "__t" { t } else { f64::NAN })
                }
                Component::Table(times, values) => {
                    let j = times.partition_point(|&t| t <= t_k);
                    values[j.saturating_sub(1)]
                }
                Component::Steps(values) => {
                    let k = (t_k / h).round().max(0.0) as usize;
                    values[k.min(values.len() - 1)]
                }
            };
            if !x.is_finite() {
                return Err(format!("input `{name}` is {x} at t = {t_k}"));
            }
            out[i] = x;
        }
        Ok(())
    }
}

fn check_name(names: &[&str], name: &str) -> Result<(), String> {
    if names.contains(&name) {
        return Ok(());
    }
    if names.is_empty() {
        Err(format!("input `{name}`: the model has no inputs"))
    } else {
        Err(format!(
            "unknown input `{name}` (the model's inputs: {})",
            names.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_are_sampled_at_midpoints_and_tables_held() {
        let names = ["a", "b"];
        let s = Schedule::from_assignments(&names, &["b=2*t+1".into()]).unwrap();
        let mut u = [9.0; 2];
        s.at(&names, 1.0, 0.5, &mut u).unwrap();
        assert_eq!(u, [0.0, 2.0 * 1.25 + 1.0]);
        let dir = std::env::temp_dir().join(format!("hamel-schedule-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("u.csv");
        std::fs::write(&f, "# torque steps\nt, a\n0, 1\n2, -1\n").unwrap();
        let s = Schedule::from_csv(&names, &f).unwrap();
        for (t, want) in [(-1.0, 1.0), (0.0, 1.0), (1.99, 1.0), (2.0, -1.0), (5.0, -1.0)] {
            s.at(&names, t, 0.1, &mut u).unwrap();
            assert_eq!(u[0], want, "t = {t}");
        }
        std::fs::write(&f, "t, c\n0, 1\n").unwrap();
        assert!(Schedule::from_csv(&names, &f)
            .unwrap_err()
            .contains("unknown input `c`"));
        std::fs::write(&f, "t, a\n0, 1\n0, 2\n").unwrap();
        assert!(Schedule::from_csv(&names, &f)
            .unwrap_err()
            .contains("u.csv:3: times must increase"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(Schedule::from_assignments(&names, &["a=x+1".into()])
            .unwrap_err()
            .contains("unknown name `x`"));
        assert!(Schedule::from_assignments(&names, &["a=1/(t-1)".into()]).is_ok());
        let s = Schedule::from_assignments(&names, &["a=1/(t-0.5)".into()]).unwrap();
        assert!(s.at(&names, 0.0, 1.0, &mut u).unwrap_err().contains("at t = 0"));
    }
}
