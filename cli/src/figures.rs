//! The standard figures of one run or of several runs of the same case:
//! energy error, constraint drift and momentum error vs time (log scale), and
//! the trajectory of the model's vector coordinates in space.

use std::path::{Path, PathBuf};

use crate::plot::{self, Curve, Curve3, Labels};
use crate::simulate::Run;
use crate::Error;
use hamel_runtime::InvariantKind;

fn label(run: &Run, several: bool) -> String {
    if several {
        run.scheme.clone()
    } else {
        format!("{} ({})", run.scheme, run.model)
    }
}

/// Groups coordinate components `name[0..2]` into vectors; returns (name, component indices).
pub fn vector_coordinates(names: &[String]) -> Vec<(String, [usize; 3])> {
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if let Some(base) = n.strip_suffix("[0]") {
            let j = names.iter().position(|m| *m == format!("{base}[1]"));
            let k = names.iter().position(|m| *m == format!("{base}[2]"));
            if let (Some(j), Some(k)) = (j, k) {
                out.push((base.to_string(), [i, j, k]));
            }
        }
    }
    out
}

/// Which figures to write besides the error plots.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// leave the trajectory plot out (e.g. where an earlier one shows the same motion)
    pub no_trajectory: bool,
    /// the trajectory plot's axes: two coordinate or velocity names (`--plot x,y`);
    /// default: every vector coordinate in space, or the first two coordinates
    pub axes: Option<(String, String)>,
}

/// Writes the figures of `runs` (the same case under one or more schemes) into `dir`.
pub fn write(runs: &[&Run], dir: &Path) -> Result<Vec<PathBuf>, Error> {
    write_with(runs, dir, &Options::default())
}

/// The column of component `name` (a coordinate or a velocity) in a run's records.
fn component<'a>(run: &'a Run, name: &str) -> Option<Box<dyn Fn(usize) -> f64 + 'a>> {
    if let Some(i) = run.coordinates.iter().position(|n| n == name) {
        return Some(Box::new(move |k| run.q[k][i]));
    }
    let i = run.velocities.iter().position(|n| n == name)?;
    Some(Box::new(move |k| run.v[k][i]))
}

/// Checks `--plot x,y` against a run's components; `Err` names the known ones.
pub fn check_axes(run: &Run, axes: &(String, String)) -> Result<(), Error> {
    check_axis_names(&run.model, &run.coordinates, &run.velocities, axes)
}

/// [`check_axes`] against a model's coordinate and velocity names (before a run).
pub fn check_axis_names(
    model: &str,
    coordinates: &[String],
    velocities: &[String],
    axes: &(String, String),
) -> Result<(), Error> {
    for a in [&axes.0, &axes.1] {
        if !coordinates.iter().chain(velocities).any(|n| n == a) {
            let known: Vec<&str> = coordinates.iter().chain(velocities).map(String::as_str).collect();
            return Err(Error::Usage(format!(
                "--plot: model `{model}` has no coordinate or velocity `{a}` (components: {})",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// For a forced model's run: the indices of its energy and of its energy
/// balance (`E − Σ W`, which the run is judged on).
fn balance_index(run: &Run) -> Option<(usize, usize)> {
    let e = run
        .invariants
        .iter()
        .position(|(_, k)| *k == InvariantKind::ForcedEnergy)?;
    let b = run
        .invariants
        .iter()
        .position(|(n, _)| n == hamel_runtime::run::ENERGY_BALANCE)?;
    Some((e, b))
}

/// [`write()`] with [`Options`].
pub fn write_with(runs: &[&Run], dir: &Path, opt: &Options) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let case = match runs.first() {
        Some(r) => format!("{}, h = {}, {} steps", r.model, r.options.h, r.options.steps),
        None => return Ok(files),
    };
    files.extend(energy_figure(runs, dir, &case)?);
    files.extend(constraint_figures(runs, dir, &case)?);
    files.extend(momentum_figure(runs, dir, &case)?);
    files.extend(trajectory_figure(runs[0], dir, opt)?);
    Ok(files)
}

/// The energy figure. A free model: the energy's relative error. A forced
/// one: the energy changes by the forces' work, so its relative change is
/// drawn with the energy balance error the run is judged on (relative to the
/// largest energy reached, as the monitor judges it).
fn energy_figure(runs: &[&Run], dir: &Path, case: &str) -> Result<Vec<PathBuf>, Error> {
    let several = runs.len() > 1;
    let forced = runs.iter().any(|r| balance_index(r).is_some());
    let mut energy = Vec::new();
    for r in runs {
        let name = label(r, several);
        match balance_index(r) {
            None => energy.push(Curve {
                label: name,
                points: (0..r.steps.len()).map(|k| (r.time(k), r.error(0, k))).collect(),
            }),
            Some((e, b)) => energy.extend(balance_curves(r, &name, e, b)),
        }
    }
    let (title, y) = if forced {
        (
            format!("Energy change and energy balance error — {case}"),
            "relative (balance: |B − B₀| / max |E|)",
        )
    } else {
        (format!("Relative energy error — {case}"), "|E − E₀| / |E₀|")
    };
    plot::log_plot(
        dir,
        "energy",
        &Labels {
            title: &title,
            x: "t",
            y,
        },
        &energy,
    )
}

/// A forced run's energy curves: the energy's relative change (invariant
/// `e`) and the error of the energy balance (invariant `b`), the latter
/// relative to the largest energy reached so far.
fn balance_curves(r: &Run, name: &str, e: usize, b: usize) -> [Curve; 2] {
    let relative = |v: f64, v0: f64| {
        if v0 != 0.0 {
            ((v - v0) / v0).abs()
        } else {
            (v - v0).abs()
        }
    };
    let mut scale = r.values[0][b].abs();
    let judged: Vec<f64> = (0..r.steps.len())
        .map(|k| {
            scale = scale.max(r.values[k][e].abs());
            let d = (r.values[k][b] - r.values[0][b]).abs();
            if scale > 0.0 {
                d / scale
            } else {
                d
            }
        })
        .collect();
    [
        Curve {
            label: format!("{name}: energy change |E − E₀| / |E₀|"),
            points: (0..r.steps.len())
                .map(|k| (r.time(k), relative(r.values[k][e], r.values[0][e])))
                .collect(),
        },
        Curve {
            label: format!("{name}: energy balance error (judged)"),
            points: (0..r.steps.len()).map(|k| (r.time(k), judged[k])).collect(),
        },
    ]
}

/// One quantity per axis: constraint residuals (in the model's units, one
/// curve per constraint) apart from the relative drift of the lengths and
/// norms that director and body-frame models keep; each figure only where
/// some run has such a constraint.
fn constraint_figures(runs: &[&Run], dir: &Path, case: &str) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let is_length = |r: &Run, i: usize| r.invariants[i].1 == InvariantKind::Geometric;
    let residuals = invariant_curves(
        runs,
        &|r, i| r.constraint_indices().contains(&i) && !is_length(r, i),
        false,
    );
    if !residuals.is_empty() {
        files.extend(plot::log_plot(
            dir,
            "constraint",
            &Labels {
                title: &format!("Constraint residuals — {case}"),
                x: "t",
                y: "|residual| (model units)",
            },
            &residuals,
        )?);
    }
    let lengths = invariant_curves(
        runs,
        &|r, i| r.constraint_indices().contains(&i) && is_length(r, i),
        true,
    );
    if !lengths.is_empty() {
        files.extend(plot::log_plot(
            dir,
            "length",
            &Labels {
                title: &format!("Length drift — {case}"),
                x: "t",
                y: "|L − L₀| / L₀",
            },
            &lengths,
        )?);
    }
    Ok(files)
}

/// One error curve per invariant `i` of each run that `pick` chooses,
/// `relative` to its initial value where asked and that is not zero.
fn invariant_curves(runs: &[&Run], pick: &dyn Fn(&Run, usize) -> bool, relative: bool) -> Vec<Curve> {
    let several = runs.len() > 1;
    let mut out = Vec::new();
    for r in runs {
        for i in (0..r.invariants.len()).filter(|&i| pick(r, i)) {
            let v0 = r.values[0][i];
            out.push(Curve {
                label: if several {
                    format!("{}: {}", r.scheme, r.invariants[i].0)
                } else {
                    r.invariants[i].0.clone()
                },
                points: (0..r.steps.len())
                    .map(|k| {
                        let e = r.error(i, k);
                        (r.time(k), if relative && v0 != 0.0 { e / v0.abs() } else { e })
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The largest relative momentum error at each record, one curve per run
/// that has momenta; no figure where none has.
fn momentum_figure(runs: &[&Run], dir: &Path, case: &str) -> Result<Vec<PathBuf>, Error> {
    if runs.iter().all(|r| r.momentum_indices().is_empty()) {
        return Ok(Vec::new());
    }
    let several = runs.len() > 1;
    let largest_error = |r: &Run, k: usize| {
        r.momentum_indices()
            .iter()
            .map(|&i| {
                let v0 = r.values[0][i];
                let e = r.error(i, k);
                if v0 != 0.0 {
                    e / v0.abs()
                } else {
                    e
                }
            })
            .fold(0.0, f64::max)
    };
    let curves: Vec<Curve> = runs
        .iter()
        .map(|r| Curve {
            label: label(r, several),
            points: if r.momentum_indices().is_empty() {
                Vec::new()
            } else {
                (0..r.steps.len()).map(|k| (r.time(k), largest_error(r, k))).collect()
            },
        })
        .collect();
    plot::log_plot(
        dir,
        "momentum",
        &Labels {
            title: &format!("Relative momentum error — {case}"),
            x: "t",
            y: "|J − J₀| / |J₀|",
        },
        &curves,
    )
}

/// The trajectory of run `r`: the two components asked for, every vector
/// coordinate in space, or the first two coordinates against each other;
/// nothing for a model with one coordinate or where `opt` leaves it out
/// (the axes asked for are checked all the same).
fn trajectory_figure(r: &Run, dir: &Path, opt: &Options) -> Result<Vec<PathBuf>, Error> {
    let title = format!("Trajectory ({}, {})", r.model, r.scheme);
    let vecs = vector_coordinates(&r.coordinates);
    // Two components against each other: those asked for, or the first two
    // coordinates of a model without vector coordinates.
    let plane = match &opt.axes {
        Some((a, b)) => {
            check_axes(r, &(a.clone(), b.clone()))?;
            Some((a.clone(), b.clone()))
        }
        None if vecs.is_empty() && r.coordinates.len() >= 2 => {
            Some((r.coordinates[0].clone(), r.coordinates[1].clone()))
        }
        None => None,
    };
    if opt.no_trajectory {
        Ok(Vec::new())
    } else if let Some((a, b)) = plane {
        let (fa, fb) = (component(r, &a).expect("checked"), component(r, &b).expect("checked"));
        let c = Curve {
            label: String::new(),
            points: (0..r.steps.len()).map(|k| (fa(k), fb(k))).collect(),
        };
        plot::line_plot(
            dir,
            "trajectory",
            &Labels {
                title: &title,
                x: &a,
                y: &b,
            },
            &[c],
            false,
        )
    } else if !vecs.is_empty() {
        let curves: Vec<Curve3> = vecs
            .iter()
            .map(|(name, ix)| Curve3 {
                label: name.clone(),
                points: r.q.iter().map(|q| [q[ix[0]], q[ix[1]], q[ix[2]]]).collect(),
            })
            .collect();
        plot::trajectory_3d(dir, "trajectory", &title, &curves)
    } else {
        Ok(Vec::new())
    }
}
