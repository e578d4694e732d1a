//! The kernels that judge a model's state rather than step it, derived with
//! every scheme so that every back-end (the derive included) provides them:
//! the constrained kinetic metric, whose singularity or conditioning says
//! whether the velocities are determined (and how close a run passes to a
//! singularity of the coordinates), and for Hamel frames the frame check
//! `[Ψ; A]`, whose rank says whether every velocity the constraints allow
//! moves the configuration. What the values mean is the runtime's
//! (`hamel_runtime::health`); here they are only derived.

use std::collections::HashSet;

use crate::sym::{directional, gradient, saddle_product, Applied, Graph, Id, Through};

use super::step::{InvariantKind, StepSystem};

/// The health kernels of a step (see the module documentation), in the
/// physical symbols `q`, `ξ` and the parameters.
#[derive(Clone, Debug)]
pub struct HealthKernels {
    /// the constrained kinetic metric `K = [[M, Aᵀ], [A, 0]]` applied to a
    /// direction `u` (the kernel's argument [`hamel_kernel::Arg::U`]),
    /// `K u`: `M u` the derivative of the momenta along `u` (of the
    /// energy's gradient where the scheme gave no momenta affine in the
    /// velocities: `M` is the Hessian of the energy in the velocities), `A`
    /// the velocity-level constraint rows. A host forms `K` a column at a
    /// time; the product is as long as the momenta (a chain's is O(N) code
    /// through its tableau) where `K` has O(N²) entries. Its locals are the
    /// rates along `u` of the physical locals it reads (see
    /// [`crate::sym::directional`]), read after
    /// [`StepSystem::physical_locals`].
    pub metric: Applied,
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
        let locals = &self.physical_locals;
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
        // The scheme's own momenta where it gave them (the Legendre
        // condition itself: one derivative of p, not two of the energy),
        // else the energy's gradient: M u is their derivative along u.
        let mut grads = self.momenta.take().or_else(|| energy.map(|e| gradient(g, e, &v)));
        if grads.as_ref().is_some_and(|p| depends_through(g, p, locals, &timed)) {
            grads = None;
        }
        let m = grads.as_ref().map_or(0, |_| v.len());
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
        let u: Vec<Id> = (0..n).map(|i| g.symbol(&format!("__u{i}"))).collect();
        let seeds: Vec<(Id, Id)> = v.iter().copied().zip(u.iter().copied()).collect();
        let (mu, rates) = match &grads {
            Some(p) => directional(g, p, &seeds, locals, "__du"),
            None => (Vec::new(), Vec::new()),
        };
        let metric = saddle_product(g, &mu, &a_rows, &u);
        let all_locals: Vec<(Id, Id)> = locals.iter().chain(&rates).copied().collect();
        let metric_varies = depends_through(g, &metric, &all_locals, &q);
        let frame_check = self.frame.as_ref().map(|psi| {
            let mut out: Vec<Id> = psi.iter().flatten().copied().collect();
            out.extend(a_rows.iter().flatten().copied());
            (psi.len() + a_rows.len(), v.len(), out)
        });
        self.health = Some(HealthKernels {
            metric: Applied {
                product: metric,
                direction: u,
                locals: rates,
            },
            metric_size: n,
            metric_varies,
            frame_check,
        });
    }
}

/// Whether any of `roots` reads a symbol of `syms`, directly or through the
/// definitions of `locals` it reads.
fn depends_through(g: &Graph, roots: &[Id], locals: &[(Id, Id)], syms: &[Id]) -> bool {
    let wanted: HashSet<Id> = syms.iter().copied().collect();
    !wanted.is_empty()
        && Through::new(g, locals)
            .post_order(roots)
            .iter()
            .any(|x| wanted.contains(x))
}
