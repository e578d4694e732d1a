//! The report's section on forces and control (docs/schemes.md §8): the
//! damped pendulum's energy against the discrete work of its friction, in
//! every scheme, and a discrete LQR that returns the inverted spherical
//! pendulum to upright.

use std::path::{Path, PathBuf};

use hamel_runtime::control::lqr_at_equilibrium;
use hamel_runtime::nalgebra::{DMatrix, DVector};
use hamel_runtime::DynStepper;

use crate::doc::{Block, Doc};
use crate::plot::{self, Curve, Labels};
use crate::simulate::{self, RunOptions};
use crate::{parse_scheme, Backend, Error};

const DAMPED: &str = "models/damped_spherical_pendulum.hamel";
const DAMPED_CART: &str = "models/damped_spherical_pendulum_cartesian.hamel";
const INVERTED: &str = "models/inverted_spherical_pendulum.hamel";

fn e(x: f64) -> String {
    format!("{x:.2e}")
}

fn png(files: Vec<PathBuf>, root: &Path, caption: &str) -> Vec<(String, String)> {
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .map(|p| {
            (
                p.strip_prefix(root).unwrap_or(&p).display().to_string(),
                caption.to_string(),
            )
        })
        .collect()
}

/// Appends section 6 to `doc`, writing its plots under `out`.
pub fn section(
    doc: &mut Doc,
    out: &Path,
    backend: Backend,
    load: &dyn Fn(&str) -> Result<hamel_compiler::Model, Error>,
    say: &mut dyn FnMut(&str),
) -> Result<(), Error> {
    doc.push(Block::Heading(
        2,
        "6. Forces and control: discrete Lagrange–d'Alembert and LQR (docs/schemes.md §8)".into(),
    ));
    // --- damped pendulum ---
    say("6. forces and control: damped pendulum");
    let (h, steps) = (0.05, 2000u64);
    doc.push(Block::Para(format!(
        "Pivot friction `dissipation = ½ c |ξ|²`, c = 1 (body frame; in Cartesian coordinates the same friction on the bob, `½ (c/r²) |x'|²`), published initial state, h = {h}, {steps} steps. Each scheme compiles its discrete work W_k of the friction; the energy balance E_k − E_0 − Σ W_j is an identity for the Hamel schemes on this model and for energy–momentum (round-off), and the scheme's own O(h²) energy error for RATTLE and Störmer–Verlet."
    )));
    let dir = out.join("6-damped");
    let mut rows = Vec::new();
    let mut defects = Vec::new();
    let mut energy_curves = Vec::new();
    for (file, scheme) in [
        (DAMPED, "hamel_averaged"),
        (DAMPED, "hamel_midpoint"),
        (DAMPED_CART, "energy_momentum"),
        (DAMPED_CART, "rattle"),
        (DAMPED_CART, "stormer_verlet"),
    ] {
        let sys = crate::compile(&load(file)?, parse_scheme(scheme, None)?, backend)?;
        let state = sys.initial("published")?;
        let opt = RunOptions {
            h,
            steps,
            compensated: false,
            record_every: 1,
            inputs: None,
            newton: Default::default(),
        };
        let r = simulate::run(&sys, state, Some("published".into()), &opt, false)?;
        let ib = r
            .invariants
            .iter()
            .position(|(n, _)| n == hamel_load::run::ENERGY_BALANCE)
            .ok_or_else(|| Error::Usage(format!("{file} is not forced")))?;
        let e0 = r.values[0][0];
        let t: Vec<f64> = (0..r.steps.len()).map(|k| r.time(k)).collect();
        let defect: Vec<(f64, f64)> = (0..r.steps.len())
            .map(|k| (t[k], ((r.values[k][ib] - e0) / e0).abs()))
            .collect();
        let worst = r.monitor.reports()[ib].max_rel_error;
        rows.push(vec![
            r.scheme.clone(),
            format!("{e0:.6}"),
            format!("{:.6}", r.values[r.steps.len() - 1][0]),
            format!("{:.6}", r.work),
            e(worst),
        ]);
        defects.push(Curve {
            label: r.scheme.clone(),
            points: defect,
        });
        if scheme == "hamel" {
            // E_k and E_0 + Σ W (= E_0 + E_k − balance_k)
            energy_curves.push(Curve {
                label: "energy E_k".into(),
                points: (0..r.steps.len()).map(|k| (t[k], r.values[k][0])).collect(),
            });
            energy_curves.push(Curve {
                label: "E_0 + discrete work Σ W_j".into(),
                points: (0..r.steps.len())
                    .map(|k| (t[k], e0 + r.values[k][0] - r.values[k][ib]))
                    .collect(),
            });
        }
    }
    doc.push(Block::Table(
        ["scheme", "E_0", "E_end", "Σ W", "max |E_k − E_0 − Σ W| / |E_0|"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
    ));
    let mut figs = png(
        plot::line_plot(
            &dir,
            "energy_work",
            &Labels {
                title: "damped pendulum, hamel_averaged: energy and initial energy plus discrete work",
                x: "t",
                y: "energy",
            },
            &energy_curves,
            false,
        )?,
        out,
        "energy E_k and E_0 + Σ W_j (they coincide to 2e-15 relative)",
    );
    figs.extend(png(
        plot::log_plot(
            &dir,
            "energy_balance",
            &Labels {
                title: "energy balance defect |E_k − E_0 − Σ W_j| / |E_0|",
                x: "t",
                y: "relative defect",
            },
            &defects,
        )?,
        out,
        "energy balance defect of each scheme (log scale)",
    ));
    doc.push(Block::Figures(figs));
    lqr_part(doc, out, backend, load, say)
}

/// The LQR half of section 6: the inverted spherical pendulum returned upright.
fn lqr_part(
    doc: &mut Doc,
    out: &Path,
    backend: Backend,
    load: &dyn Fn(&str) -> Result<hamel_compiler::Model, Error>,
    say: &mut dyn FnMut(&str),
) -> Result<(), Error> {
    say("6. forces and control: LQR of the inverted pendulum");
    let h = 0.05;
    let sys = hamel_load::compile_with_sensitivity(&load(INVERTED)?, parse_scheme("hamel_midpoint", None)?, backend)?;
    let p = |n: &str| sys.parameter(n).unwrap_or(f64::NAN);
    let (m, r, g) = (p("m"), p("r"), p("g"));
    let upright = sys.initial("upright")?;
    let z_star = upright.z.clone();
    let n = z_star.len();
    // The state satisfies ‖γ‖² = 1: its derivative at z* is (2γ*, 0, 0).
    let mut rel = DMatrix::zeros(1, n);
    for i in 0..3 {
        rel[(0, i)] = 2.0 * z_star[i];
    }
    let w = 1.0 / (m * r * r).powi(2);
    let mut qd = vec![100.0, 100.0, 0.0];
    qd.extend(std::iter::repeat_n(w, n - 3));
    let q = DMatrix::from_diagonal(&DVector::from_vec(qd));
    let r_w = DMatrix::identity(2, 2) / (m * g * r).powi(2);
    let design = lqr_at_equilibrium(
        &mut DynStepper::new(&sys, h)?,
        &upright,
        &[0.0, 0.0],
        &rel,
        &q,
        &r_w,
        1e-13,
        10_000,
    )?;
    let mut eig: Vec<f64> = design.a_r.complex_eigenvalues().iter().map(|c| c.norm()).collect();
    eig.sort_by(f64::total_cmp);
    let (lqr, k) = (&design.lqr, &design.gain);
    let mut st = sys.initial("tilted")?;
    let mut cl = DynStepper::new(&sys, h)?;
    let (mut tilt, mut dev, mut u1, mut u2) = (vec![], vec![], vec![], vec![]);
    let (mut settled, mut peak) = (None, 0.0f64);
    for step in 0..=300u64 {
        let time = step as f64 * h;
        let d = &st.z - &z_star;
        let u = -(k * &d);
        let gn = (st.z[0].powi(2) + st.z[1].powi(2) + st.z[2].powi(2)).sqrt();
        tilt.push((time, (st.z[2] / gn).clamp(-1.0, 1.0).acos().to_degrees()));
        dev.push((time, d.norm()));
        u1.push((time, u[0] / (m * g * r)));
        u2.push((time, u[1] / (m * g * r)));
        peak = peak.max(u.amax());
        if settled.is_none() && d.norm() < 1e-8 {
            settled = Some(step);
        }
        cl.step_with_inputs(&mut st, u.as_slice())?;
    }
    doc.push(Block::Para(format!(
        "Inverted spherical pendulum (`{INVERTED}`, body torques u₁, u₂ as `force xi = (u1, u2, 0)`), hamel_midpoint, h = {h}. (A, B) from the generated linearization at upright rest; the design runs in an orthonormal basis T of the tangent space of ‖γ‖ = 1 (the full state carries the unit eigenvalue of ‖γ‖, which no input reaches). Q = diag(100, 100, (mr²)⁻², (mr²)⁻²) on (γ₁, γ₂, π₁, π₂), R = (mgr)⁻² I. Open-loop |eig(A_r)| = {}; expected (1 ± h/2)/(1 ∓ h/2), each double. Riccati: {} iterations; closed-loop spectral radius {:.4}. From a 6.4° tilt at rest: ‖z − z*‖ < 1e-8 after {} steps, peak |u| = {:.3} mgr.",
        eig.iter().map(|x| format!("{x:.5}")).collect::<Vec<_>>().join(", "),
        lqr.iterations,
        lqr.spectral_radius,
        settled.map_or("—".to_string(), |s| s.to_string()),
        peak / (m * g * r)
    )));
    let dir = out.join("6-lqr");
    let mut figs = png(
        plot::line_plot(
            &dir,
            "tilt",
            &Labels {
                title: "inverted pendulum under LQR: tilt from upright",
                x: "t",
                y: "tilt (degrees)",
            },
            &[Curve {
                label: "tilt".into(),
                points: tilt,
            }],
            false,
        )?,
        out,
        "tilt from upright under LQR",
    );
    figs.extend(png(
        plot::log_plot(
            &dir,
            "deviation",
            &Labels {
                title: "inverted pendulum under LQR: ‖z − z*‖",
                x: "t",
                y: "deviation",
            },
            &[Curve {
                label: "‖z − z*‖".into(),
                points: dev,
            }],
        )?,
        out,
        "distance from the upright equilibrium (log scale)",
    ));
    figs.extend(png(
        plot::line_plot(
            &dir,
            "inputs",
            &Labels {
                title: "body torques u / (mgr)",
                x: "t",
                y: "u / mgr",
            },
            &[
                Curve {
                    label: "u₁".into(),
                    points: u1,
                },
                Curve {
                    label: "u₂".into(),
                    points: u2,
                },
            ],
            false,
        )?,
        out,
        "the feedback torques",
    ));
    doc.push(Block::Figures(figs));
    Ok(())
}
