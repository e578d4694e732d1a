//! The kernels that judge a model's state rather than step it, derived with
//! every scheme so that every back-end (the derive included) provides them:
//! the constrained kinetic metric, whose singularity or conditioning says
//! whether the velocities are determined (and how close a run passes to a
//! singularity of the coordinates), and for Hamel frames the frame check
//! `[Ψ; A]`, whose rank says whether every velocity the constraints allow
//! moves the configuration. What the values mean is the runtime's
//! (`hamel_runtime::health`); here they are only derived.

use crate::sym::{gradient, hessian, Id};

use super::step::{InvariantKind, StepSystem};

/// The health kernels of a step (see the module documentation), in the
/// physical symbols `q`, `ξ` and the parameters.
#[derive(Clone, Debug)]
pub struct HealthKernels {
    /// the constrained kinetic metric `K = [[M, Aᵀ], [A, 0]]`, row-major:
    /// `M` the Hessian of the energy in the velocities (`∂p/∂ξ` where the
    /// scheme gave it, [`StepSystem::kinetic_metric`]), `A` the
    /// velocity-level constraint rows
    pub metric: Vec<Id>,
    /// the size of `K`
    pub metric_size: usize,
    /// whether `K` depends on the configuration (if not, it never needs
    /// watching along a run)
    pub metric_varies: bool,
    /// `[Ψ; A]` row-major with its rows and columns, for a model with a
    /// Hamel frame (`None` in generalized coordinates)
    pub frame_check: Option<(usize, usize, Vec<Id>)>,
}

impl StepSystem {
    /// Derives the health kernels (after which [`StepSystem::functions`]
    /// also lists `metric` and, with a frame, `frame_check`).
    pub fn add_health(&mut self) {
        let g = &mut self.graph;
        let q: Vec<Id> = self.phys_q.iter().map(|s| s.sym).collect();
        let v: Vec<Id> = self.phys_v.iter().map(|s| s.sym).collect();
        // K is non-singular exactly when the velocity terms of the
        // Lagrangian determine every velocity the constraints allow and the
        // constraints are independent; its conditioning degrades near a
        // singularity of the coordinates.
        let energy = self
            .invariants
            .iter()
            .find(|i| i.kind == InvariantKind::Energy)
            .map(|i| i.expr);
        // The metric takes a physical state without its time: rows that
        // depend on time (a rheonomic constraint's) are left out, and the
        // whole metric where the mass matrix does.
        let timed: Vec<Id> = self.time.map(|(_, t)| t).into_iter().collect();
        let mut rows: Vec<Vec<Id>> = Vec::new();
        if let Some(metric) = self.kinetic_metric.take() {
            // The scheme's own `∂p/∂ξ`: the Hessian of the energy where the
            // Lagrangian is quadratic in the velocities (the schemes that
            // derive it require that), and the Legendre condition itself.
            rows = metric;
        } else if let Some(e) = energy {
            // One derivative per velocity across the rows, which share most
            // of their terms (a chain's metric couples every link).
            let grads = gradient(g, e, &v);
            rows = hessian(g, &grads, &v);
        }
        if g.depends_on_any(&rows.concat(), &timed) {
            rows.clear();
        }
        let m = rows.len();
        // Velocity rows: the velocity constraints, and the velocity level of
        // the holonomic ones (their position level has no velocity row).
        let mut a_rows = Vec::new();
        for i in self.invariants.iter().filter(|i| i.kind.is_residual()) {
            let row = gradient(g, i.expr, &v);
            if m > 0 && row.iter().any(|&x| !g.is_const(x, 0.0)) && !g.depends_on_any(&row, &timed) {
                a_rows.push(row);
            }
        }
        let n = m + a_rows.len();
        let zero = g.constant(0.0);
        let mut metric = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                metric.push(match (i < m, j < m) {
                    (true, true) => rows[i][j],
                    (true, false) => a_rows[j - m][i],
                    (false, true) => a_rows[i - m][j],
                    (false, false) => zero,
                });
            }
        }
        let metric_varies = g.depends_on_any(&metric, &q);
        let frame_check = self.frame.as_ref().map(|psi| {
            let mut out: Vec<Id> = psi.iter().flatten().copied().collect();
            out.extend(a_rows.iter().flatten().copied());
            (psi.len() + a_rows.len(), v.len(), out)
        });
        self.health = Some(HealthKernels {
            metric,
            metric_size: n,
            metric_varies,
            frame_check,
        });
    }
}
