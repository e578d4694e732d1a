//! Input schedules: the control inputs `u_k` a run applies at each step.
//!
//! Two conventions (docs/schemes.md §8): a table is a zero-order hold (each
//! row's values held from its time on) and a step takes its mean over the
//! step, `u_k = (1/h) ∫ u dt` over `[t_k, t_k + h]`; a function of time is
//! sampled at the step's midpoint `t_k + h/2`. Both keep the schemes second
//! order (sampling at `t_k` makes them first order). The mean rather than a
//! sample for tables: on a schedule given on the step grid it is the row
//! itself (the DMOC and discrete-LQR convention), on a finer one it is second
//! order like the midpoint, and a pulse shorter than a step keeps its impulse
//! instead of vanishing between samples.

use std::path::Path;

use hamel_compiler::sym::{Graph, Id};

use crate::table::Table;

/// How one input component varies.
#[derive(Clone, Debug)]
enum Component {
    /// a function of time, sampled at the step's midpoint
    Function(Graph, Id),
    /// held from each time of `times` on: `values[j]` from `times[j]` (and
    /// `values[0]` before `times[0]`)
    Table(Vec<f64>, Vec<f64>),
    /// one value per step (a run may not take more steps than there are
    /// values, nor fewer than one less, see [`Schedule::check_steps`]; the inputs recorded with a
    /// run's last state, of a step not taken, hold the last value)
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
                .ok_or_else(|| format!("input `{item}`: expected `name=value` or `name=expression in t`"))?;
            let name = name.trim();
            check_name(names, name)?;
            let (g, root) =
                hamel_compiler::model::time_function(expr.trim()).map_err(|e| format!("input `{item}`: {e}"))?;
            s.set(name, Component::Function(g, root))?;
        }
        Ok(s)
    }

    /// A CSV table with a column `t` (ascending, its first row at or before
    /// the run's start `t = 0`) and one column per input it sets (other
    /// columns are refused); held between rows. Read as [`Table`] reads
    /// (a regular file of at most [`crate::table::MAX_TABLE_BYTES`]).
    pub fn from_csv(names: &[&str], path: &Path) -> Result<Schedule, String> {
        Schedule::from_table(names, &Table::read(path)?)
    }

    /// [`Schedule::from_csv`] of a table already read.
    pub fn from_table(names: &[&str], table: &Table) -> Result<Schedule, String> {
        let at = |line: usize| table.at(line);
        let hl = table.header_line;
        let t_col = table
            .column("t")
            .ok_or_else(|| format!("{}: the header needs a column `t`", at(hl)))?;
        for (j, c) in table.columns.iter().enumerate() {
            if j != t_col {
                check_name(names, c).map_err(|e| format!("{}: {e}", at(hl)))?;
            }
        }
        let mut times = Vec::new();
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); table.columns.len()];
        for (ln, cells) in &table.rows {
            for (j, c) in cells.iter().enumerate() {
                values[j].push(table.number(*ln, j, c)?);
            }
            let t = values[t_col][values[t_col].len() - 1];
            if times.last().is_some_and(|&p| t <= p) {
                return Err(format!("{}: times must increase (t = {t})", at(*ln)));
            }
            // Runs start at t = 0: a table starting later would leave its
            // first stretch to a guess. Holding the first row backwards in
            // time would shift the schedule silently, so it is refused.
            if times.is_empty() && t > 0.0 {
                return Err(format!(
                    "{}: the first row is at t = {t}, after the run's start t = 0; give a row at t = 0 (each row holds from its time on)",
                    at(*ln)
                ));
            }
            times.push(t);
        }
        if times.is_empty() {
            return Err(format!("`{}` has a header but no rows", table.file));
        }
        let mut s = Schedule::default();
        for (j, c) in table.columns.iter().enumerate() {
            if j != t_col {
                s.set(c, Component::Table(times.clone(), values[j].clone()))?;
            }
        }
        Ok(s)
    }

    /// One row of inputs per step (`rows[k]` over step `k`, in the order of
    /// `names`); a run of more steps than rows is refused (see
    /// [`Schedule::check_steps`]).
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

    /// Refuses a run of `steps` steps longer than a per-step array (the
    /// steps past its end would take a value nobody gave) or shorter than
    /// it by more than the row recorded with the last state (its rows past
    /// the end would be dropped without a word).
    pub fn check_steps(&self, steps: u64) -> Result<(), String> {
        for (name, c) in &self.components {
            if let Component::Steps(values) = c {
                if (values.len() as u64) < steps {
                    return Err(format!(
                        "the inputs have {} row(s) (input `{name}`), the run takes {steps} steps: give one row per step",
                        values.len()
                    ));
                }
                // Longer is refused too: the rows past the end would be
                // dropped without a word (one more is the inputs recorded
                // with the last state). A CSV table differs: its rows carry
                // their times, and those after the run's end are not needed.
                if values.len() as u64 > steps.saturating_add(1) {
                    return Err(format!(
                        "the inputs have {} row(s) (input `{name}`), the run takes {steps} steps: give one row per step (rows past the end would not be used)",
                        values.len()
                    ));
                }
            }
        }
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
                Component::Table(times, values) => step_mean(times, values, t_k, h),
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

/// The mean of the zero-order hold `values` (from `times`) over the step
/// `[t_k, t_k + h]`. A row whose time lies within `1e-9 |h|` of a step end
/// counts as at that end, so that a schedule written on the step grid (times
/// `0.3` against `t_k = 3 × 0.1`) gives each step its own row exactly.
fn step_mean(times: &[f64], values: &[f64], t_k: f64, h: f64) -> f64 {
    let (a, b) = if h >= 0.0 { (t_k, t_k + h) } else { (t_k + h, t_k) };
    let snap = 1e-9 * h.abs();
    let held = |t: f64| values[times.partition_point(|&s| s <= t + snap).saturating_sub(1)];
    let first = times.partition_point(|&s| s <= a + snap);
    let last = times.partition_point(|&s| s < b - snap);
    if first >= last {
        return held(a);
    }
    // Breakpoints strictly inside the step: weigh each held value by its span.
    let mut sum = 0.0;
    let mut from = a;
    let mut value = held(a);
    for j in first..last {
        sum += value * (times[j] - from);
        from = times[j];
        value = values[j];
    }
    sum += value * (b - from);
    sum / (b - a)
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
        for (t, want) in [(-1.0, 1.0), (0.0, 1.0), (1.9, 1.0), (2.0, -1.0), (5.0, -1.0)] {
            s.at(&names, t, 0.1, &mut u).unwrap();
            assert_eq!(u[0], want, "t = {t}");
        }
        // A step across a row's time takes the mean: 0.025 at 1, 0.075 at −1.
        s.at(&names, 1.975, 0.1, &mut u).unwrap();
        assert!((u[0] - (0.025 - 0.075) / 0.1).abs() < 1e-12, "{}", u[0]);
        // Rows on the step grid, written in decimal: each step its own row exactly.
        std::fs::write(&f, "t, a\n0, 1\n0.1, 2\n0.2, 3\n0.3, 4\n").unwrap();
        let s = Schedule::from_csv(&names, &f).unwrap();
        for k in 0..5 {
            s.at(&names, k as f64 * 0.1, 0.1, &mut u).unwrap();
            assert_eq!(u[0], [1.0, 2.0, 3.0, 4.0, 4.0][k], "step {k}");
        }
        // A pulse shorter than a step keeps its impulse (h u_k = 0.01 × 5).
        std::fs::write(&f, "t, a\n0, 0\n0.52, 5\n0.53, 0\n").unwrap();
        let s = Schedule::from_csv(&names, &f).unwrap();
        let impulse: f64 = (0..10)
            .map(|k| {
                s.at(&names, k as f64 * 0.1, 0.1, &mut u).unwrap();
                0.1 * u[0]
            })
            .sum();
        assert!((impulse - 0.05).abs() < 1e-12, "{impulse}");
        // A table that starts after the run does is refused, naming the file and the time.
        std::fs::write(&f, "t, a\n5, 1\n6, 2\n").unwrap();
        let e = Schedule::from_csv(&names, &f).unwrap_err();
        assert!(
            e.contains("u.csv:2: the first row is at t = 5, after the run's start t = 0"),
            "{e}"
        );
        // Duplicate columns are named.
        std::fs::write(&f, "t, a, a\n0, 1, 2\n").unwrap();
        let e = Schedule::from_csv(&names, &f).unwrap_err();
        assert!(e.contains("u.csv:1: column `a` appears twice"), "{e}");
        // A per-step array shorter than the run is refused.
        let s = Schedule::per_step(&names, &[vec![1.0, 2.0], vec![3.0, 4.0]]).unwrap();
        assert!(s.check_steps(2).is_ok());
        let e = s.check_steps(3).unwrap_err();
        assert!(e.contains("2 row(s)") && e.contains("the run takes 3 steps"), "{e}");
        // ... and one longer than the run and its last state (hostile campaign)
        assert!(s.check_steps(1).is_ok(), "the last row is recorded with the last state");
        let e = s.check_steps(0).unwrap_err();
        assert!(
            e.contains("2 row(s)") && e.contains("rows past the end would not be used"),
            "{e}"
        );
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
