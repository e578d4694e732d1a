//! The standard figures of one run or of several runs of the same case:
//! energy error, constraint drift and momentum error vs time (log scale), and
//! the trajectory of the model's vector coordinates in space.

use std::path::{Path, PathBuf};

use crate::plot::{self, Curve, Curve3, Labels};
use crate::simulate::Run;
use crate::Error;

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

/// Writes the figures of `runs` (the same case under one or more schemes) into `dir`.
pub fn write(runs: &[&Run], dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let several = runs.len() > 1;
    let mut files = Vec::new();
    let case = match runs.first() {
        Some(r) => format!("{}, h = {}, {} steps", r.model, r.options.h, r.options.steps),
        None => return Ok(files),
    };
    let series = |f: &dyn Fn(&Run, usize) -> Option<f64>| -> Vec<Curve> {
        runs.iter()
            .map(|r| Curve {
                label: label(r, several),
                points: (0..r.steps.len())
                    .filter_map(|k| f(r, k).map(|y| (r.time(k), y)))
                    .collect(),
            })
            .collect()
    };
    let energy = series(&|r, k| Some(r.error(0, k)));
    files.extend(plot::log_plot(
        dir,
        "energy",
        &Labels {
            title: &format!("Relative energy error — {case}"),
            x: "t",
            y: "|E − E₀| / |E₀|",
        },
        &energy,
    )?);
    if runs.iter().any(|r| !r.constraint_indices().is_empty()) {
        let c = series(&|r, k| {
            let ix = r.constraint_indices();
            (!ix.is_empty()).then(|| ix.iter().map(|&i| r.error(i, k)).fold(0.0, f64::max))
        });
        files.extend(plot::log_plot(
            dir,
            "constraint",
            &Labels {
                title: &format!("Constraint drift — {case}"),
                x: "t",
                y: "max constraint error",
            },
            &c,
        )?);
    }
    if runs.iter().any(|r| !r.momentum_indices().is_empty()) {
        let m = series(&|r, k| {
            let ix = r.momentum_indices();
            (!ix.is_empty()).then(|| {
                ix.iter()
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
            })
        });
        files.extend(plot::log_plot(
            dir,
            "momentum",
            &Labels {
                title: &format!("Relative momentum error — {case}"),
                x: "t",
                y: "|J − J₀| / |J₀|",
            },
            &m,
        )?);
    }
    // The trajectory of the first run: every vector coordinate in space, or
    // the first two coordinates against each other.
    let r = runs[0];
    let vecs = vector_coordinates(&r.coordinates);
    if !vecs.is_empty() {
        let curves: Vec<Curve3> = vecs
            .iter()
            .map(|(name, ix)| Curve3 {
                label: name.clone(),
                points: r.q.iter().map(|q| [q[ix[0]], q[ix[1]], q[ix[2]]]).collect(),
            })
            .collect();
        files.extend(plot::trajectory_3d(
            dir,
            "trajectory",
            &format!("Trajectory ({}, {})", r.model, r.scheme),
            &curves,
        )?);
    } else if r.coordinates.len() >= 2 {
        let c = Curve {
            label: String::new(),
            points: r.q.iter().map(|q| (q[0], q[1])).collect(),
        };
        files.extend(plot::line_plot(
            dir,
            "trajectory",
            &Labels {
                title: &format!("Trajectory ({}, {})", r.model, r.scheme),
                x: &r.coordinates[0],
                y: &r.coordinates[1],
            },
            &[c],
            false,
        )?);
    }
    Ok(files)
}
