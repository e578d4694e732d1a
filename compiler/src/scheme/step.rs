//! The scheme-agnostic description of one implicit step.
//!
//! Every scheme turns a model into a [`StepSystem`]: a state `z`, unknowns
//! `x`, parameters `θ` and step size `h`, with the residual `R(x; z)`, its
//! analytic Jacobian `∂R/∂x`, the explicit increment `z' − z = U(x; z)`, a
//! predictor `x₀(z, x_prev)`, and the maps between `z` and the physical state
//! `(q, ξ)` on which invariants are evaluated. Back-ends see only [`Function`]s.
//!
//! Schemes are derived with absolute unknowns and then put in increment form
//! ([`StepSystem::into_increment_form`]): an unknown that becomes a state
//! component is replaced by its increment, so that differences such as
//! `q_{k+1} − q_k` cancel symbolically instead of in floating point, and the
//! runtime can add increments to the state with compensated summation.

use crate::model::Model;
use crate::sym::{jacobian, Function, Graph, Id};

pub use hamel_kernel::InvariantKind;

/// A quantity evaluated on the physical state.
#[derive(Clone, Debug)]
pub struct Invariant {
    /// label
    pub name: String,
    /// how its error is reported
    pub kind: InvariantKind,
    /// expression in the physical symbols and parameters
    pub expr: Id,
}

/// A named scalar symbol of the step system.
#[derive(Clone, Debug)]
pub struct Slot {
    /// display name
    pub name: String,
    /// symbol node
    pub sym: Id,
}

/// One implicit step, fully derived. See the module documentation.
#[derive(Clone, Debug)]
pub struct StepSystem {
    /// model name
    pub model: String,
    /// scheme label, e.g. `hamel(averaged)`
    pub scheme: String,
    /// all expressions
    pub graph: Graph,
    /// parameters θ (named by their struct fields), with defaults
    pub params: Vec<(Slot, f64)>,
    /// step size symbol
    pub h: Id,
    /// the step's exogenous data `e = (t_k, u_k)`: time at the start
    /// of the step, the inputs held over it, and the previous step's inputs
    /// (empty for a model without forces or inputs)
    pub exogenous: Vec<Slot>,
    /// the discrete work of the external force over the step, `W(x; z, e)`
    /// (`⟨F⁻ + F⁺, ξ_{k,k+1}⟩`); `None` for a free model
    pub work: Option<Id>,
    /// `∂R/∂u`, `∂U/∂u` (row-major), for the input sensitivity `∂z'/∂u`
    pub input_sensitivity: Option<[Vec<Vec<Id>>; 2]>,
    /// `(kl, ku)` when the Jacobian is banded enough for a banded LU to pay:
    /// no entry more than `kl` below or `ku` above the diagonal (after the
    /// unknowns were reordered to narrow the band)
    pub band: Option<(usize, usize)>,
    /// state `z`
    pub state: Vec<Slot>,
    /// unknowns `x`
    pub unknowns: Vec<Slot>,
    /// previous step's solution (for the predictor), one per unknown
    pub previous: Vec<Id>,
    /// `R(x; z, θ, h)`
    pub residual: Vec<Id>,
    /// `∂R/∂x`, row-major
    pub jacobian: Vec<Vec<Id>>,
    /// `z' − z` as a function of `(x; z, θ, h)`
    pub update: Vec<Id>,
    /// `x₀(z, x_prev; θ, h)`
    pub predictor: Vec<Id>,
    /// `∂R/∂z`, `∂U/∂z`, `∂U/∂x` (row-major), for the step-map sensitivity
    pub sensitivity: Option<[Vec<Vec<Id>>; 3]>,
    /// physical coordinates `q` (symbols, used by invariants and initial data)
    pub phys_q: Vec<Slot>,
    /// physical velocities `ξ`
    pub phys_v: Vec<Slot>,
    /// `z(q, ξ)`: state from physical data
    pub init_state: Vec<Id>,
    /// `x(q, ξ)`: a first warm start from physical data
    pub init_warm: Vec<Id>,
    /// Observation of the physical state from `z`: solve `K(z) y = b(z)`,
    /// then `q = obs_q(z)`, `ξ = obs_v(z, y)`. Empty `K` means no solve.
    pub obs_matrix: Vec<Vec<Id>>,
    /// right-hand side `b(z)`
    pub obs_rhs: Vec<Id>,
    /// solution symbols `y`
    pub obs_solution: Vec<Id>,
    /// `q(z)`
    pub obs_q: Vec<Id>,
    /// `ξ(z, y)`
    pub obs_v: Vec<Id>,
    /// quantities to monitor, on the physical state
    pub invariants: Vec<Invariant>,
    /// named initial states `(q, ξ)` as expressions of θ
    pub initials: Vec<(String, Vec<Id>, Vec<Id>)>,
    /// the model's top-level `let` definitions, in the physical symbols and θ
    pub lets: Vec<(String, Vec<Id>)>,
    /// the Hamel frame's matrix `Ψ(q)` (`q̇ = Ψ ξ`, n×m) in the physical
    /// symbols, for schemes in Hamel form; `None` in generalized coordinates
    pub frame: Option<Vec<Vec<Id>>>,
}

impl StepSystem {
    /// Number of input components `u` (`e` holds `t`, then `u_k`).
    pub fn n_inputs(&self) -> usize {
        self.exogenous.len().saturating_sub(1)
    }

    /// Fills in the Jacobian from the residual.
    pub fn finish_jacobian(&mut self) {
        let x: Vec<Id> = self.unknowns.iter().map(|s| s.sym).collect();
        self.jacobian = jacobian(&mut self.graph, &self.residual, &x);
        self.sensitivity = None;
        self.input_sensitivity = None;
    }

    /// Derives the partial derivatives of residual and increment that the
    /// step-map sensitivity needs (after which [`StepSystem::functions`] also
    /// lists `sensitivity_parts`). Kept apart because they roughly double the
    /// derived and emitted code.
    pub fn add_sensitivity(&mut self) {
        let x: Vec<Id> = self.unknowns.iter().map(|s| s.sym).collect();
        let z: Vec<Id> = self.state.iter().map(|s| s.sym).collect();
        let rz = jacobian(&mut self.graph, &self.residual, &z);
        let uz = jacobian(&mut self.graph, &self.update, &z);
        let ux = jacobian(&mut self.graph, &self.update, &x);
        self.sensitivity = Some([rz, uz, ux]);
        if self.n_inputs() > 0 {
            let u: Vec<Id> = self.exogenous[1..1 + self.n_inputs()].iter().map(|s| s.sym).collect();
            let ru = jacobian(&mut self.graph, &self.residual, &u);
            let uu = jacobian(&mut self.graph, &self.update, &u);
            self.input_sensitivity = Some([ru, uu]);
        }
    }

    /// Rewrites the system in increment form. `base[i] = Some(j)` says that
    /// unknown `i` becomes state component `j` (`z'_j = x_i`); it is replaced by
    /// `d_i = x_i − z_j`. Other unknowns are kept as they are. Before the call
    /// `update` holds `z'`, after it `z' − z`.
    pub fn into_increment_form(mut self, base: &[Option<usize>]) -> StepSystem {
        let g = &mut self.graph;
        let z: Vec<Id> = self.state.iter().map(|s| s.sym).collect();
        let d: Vec<Id> = (0..self.unknowns.len()).map(|i| g.symbol(&format!("__d{i}"))).collect();
        let wd: Vec<Id> = (0..self.unknowns.len())
            .map(|i| g.symbol(&format!("__wd{i}")))
            .collect();
        let mut map_x = crate::sym::SubstMap::default();
        let mut map_w = crate::sym::SubstMap::default();
        for (i, slot) in self.unknowns.iter().enumerate() {
            match base[i] {
                Some(j) => {
                    let v = g.add2(z[j], d[i]);
                    map_x.insert(slot.sym, v);
                    // The previous step's x_i is the current z_j.
                    map_w.insert(self.previous[i], z[j]);
                }
                None => {
                    map_x.insert(slot.sym, d[i]);
                    map_w.insert(self.previous[i], wd[i]);
                }
            }
        }
        self.residual = g.substitute_all(&self.residual, &map_x);
        if let Some(w) = self.work {
            self.work = Some(g.substitute_all(&[w], &map_x)[0]);
        }
        let next = g.substitute_all(&self.update, &map_x);
        self.update = next.iter().zip(&z).map(|(&n, &zj)| g.sub(n, zj)).collect();
        // An unknown guessed as its previous value (`x_i ≈ x_i,prev`, error
        // O(h)) is guessed, in increment form, by linear extrapolation: the
        // previous increment (`x_i ≈ 2 x_i,prev − x_i,prev2`, error O(h²)).
        let pred = g.substitute_all(&self.predictor, &map_w);
        self.predictor = pred
            .iter()
            .enumerate()
            .map(|(i, &p)| match base[i] {
                Some(_) if self.predictor[i] == self.previous[i] => wd[i],
                Some(j) => g.sub(p, z[j]),
                None => p,
            })
            .collect();
        self.init_warm = self
            .init_warm
            .iter()
            .enumerate()
            .map(|(i, &w)| match base[i] {
                Some(j) => g.sub(w, self.init_state[j]),
                None => w,
            })
            .collect();
        for (i, slot) in self.unknowns.iter_mut().enumerate() {
            slot.sym = d[i];
            if base[i].is_some() {
                slot.name = format!("Δ{}", slot.name.trim_end_matches('+'));
            }
        }
        self.previous = wd;
        self.eliminate_explicit();
        self.finish_jacobian();
        if self.eliminate_blocks() {
            self.finish_jacobian();
        }
        self.order_for_band();
        self
    }

    /// Removes rows `gone_rows` and unknowns `gone` (whose values in the
    /// remaining unknowns are `value`) from the system: the other rows, the
    /// update and the work get the values substituted; the predictor guesses
    /// an eliminated unknown from the previous solution of the others.
    fn substitute_eliminated(&mut self, gone_rows: &[usize], gone: &[usize], value: &crate::sym::SubstMap) {
        let g = &mut self.graph;
        let x: Vec<Id> = self.unknowns.iter().map(|s| s.sym).collect();
        let keep = |k: usize| !gone.contains(&k);
        let rows: Vec<Id> = self
            .residual
            .iter()
            .enumerate()
            .filter(|(i, _)| !gone_rows.contains(i))
            .map(|(_, &r)| r)
            .collect();
        self.residual = g.substitute_all(&rows, value);
        self.update = g.substitute_all(&self.update, value);
        if let Some(w) = self.work {
            self.work = Some(g.substitute_all(&[w], value)[0]);
        }
        let to_prev: crate::sym::SubstMap = x.iter().copied().zip(self.previous.iter().copied()).collect();
        let mut prev_value = crate::sym::SubstMap::default();
        for &j in gone {
            let f = value[&x[j]];
            prev_value.insert(self.previous[j], g.substitute(f, &to_prev));
        }
        let pred: Vec<Id> = (0..x.len()).filter(|&k| keep(k)).map(|k| self.predictor[k]).collect();
        self.predictor = g.substitute_all(&pred, &prev_value);
        self.init_warm = (0..x.len()).filter(|&k| keep(k)).map(|k| self.init_warm[k]).collect();
        self.previous = (0..x.len()).filter(|&k| keep(k)).map(|k| self.previous[k]).collect();
        let names = std::mem::take(&mut self.unknowns);
        self.unknowns = names
            .into_iter()
            .enumerate()
            .filter(|(k, _)| keep(*k))
            .map(|(_, s)| s)
            .collect();
    }

    /// Eliminates small blocks of unknowns the residual gives implicitly but
    /// linearly: rows affine in a block `y` (one to three unknowns) whose
    /// coefficient matrix `A` depends on the other unknowns but is the
    /// identity at `h = 0` (so `A = I + O(h)`, invertible at the step sizes
    /// the scheme resolves). Then `y = −A⁻¹ R(y = 0)` symbolically. The
    /// kinematic rows of Hamel schemes with frames linear in `q` are such
    /// blocks: `q⁺ − q − h Ψ(q̄) ξ̄ = 0` is a Cayley transform, explicit in ξ.
    /// Reads the Jacobian of [`StepSystem::finish_jacobian`]; returns whether
    /// it eliminated anything (the Jacobian is then stale).
    pub fn eliminate_blocks(&mut self) -> bool {
        let x: Vec<Id> = self.unknowns.iter().map(|s| s.sym).collect();
        let n = x.len();
        if n <= 3 {
            return false;
        }
        let jac = std::mem::take(&mut self.jacobian);
        let g = &mut self.graph;
        let zero = g.constant(0.0);
        let at_h0: crate::sym::SubstMap = [(self.h, zero)].into_iter().collect();
        let is = |g: &mut Graph, e: Id, v: f64| {
            let e0 = g.substitute(e, &at_h0);
            g.is_const(e0, v)
        };
        // Pair each row with an unknown whose coefficient is 1 at h = 0.
        let mut pair_of_row: Vec<Option<usize>> = vec![None; n];
        let mut taken = vec![false; n];
        for i in 0..n {
            for j in 0..n {
                if !taken[j] && !g.is_const(jac[i][j], 0.0) && is(g, jac[i][j], 1.0) {
                    pair_of_row[i] = Some(j);
                    taken[j] = true;
                    break;
                }
            }
        }
        let masks: Vec<Vec<bool>> = x.iter().map(|&xj| g.dependency_mask(&[xj])).collect();
        let reads = |e: Id, j: usize| masks[j].get(e.index()).copied().unwrap_or(false);
        let mut used_rows = vec![false; n];
        let mut chosen_unknowns: Vec<usize> = Vec::new();
        let mut blocks: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
        for i0 in 0..n {
            let Some(j0) = pair_of_row[i0] else { continue };
            if used_rows[i0] {
                continue;
            }
            // The block: paired rows coupled through the paired unknowns.
            let mut rows = vec![i0];
            let mut cols = vec![j0];
            let mut k = 0;
            while k < rows.len() && rows.len() <= 3 {
                let r = rows[k];
                for (i, p) in pair_of_row.iter().enumerate() {
                    if let Some(j) = *p {
                        if !rows.contains(&i) && (!g.is_const(jac[r][j], 0.0) || !g.is_const(jac[i][cols[k]], 0.0)) {
                            rows.push(i);
                            cols.push(j);
                        }
                    }
                }
                k += 1;
            }
            if rows.len() > 3 || rows.len() < 2 {
                continue;
            }
            let affine = rows
                .iter()
                .all(|&r| cols.iter().all(|&c| cols.iter().all(|&c2| !reads(jac[r][c], c2))));
            let identity = rows.iter().enumerate().all(|(a, &r)| {
                cols.iter()
                    .enumerate()
                    .all(|(b, &c)| is(g, jac[r][c], if a == b { 1.0 } else { 0.0 }))
            });
            // Rows must not read unknowns of blocks already taken (and vice versa).
            let independent = rows
                .iter()
                .all(|&r| chosen_unknowns.iter().all(|&c| !reads(self.residual[r], c)))
                && blocks
                    .iter()
                    .all(|(br, _)| br.iter().all(|&r| cols.iter().all(|&c| !reads(self.residual[r], c))));
            if affine && identity && independent {
                for &r in &rows {
                    used_rows[r] = true;
                }
                chosen_unknowns.extend(cols.iter().copied());
                blocks.push((rows, cols));
            }
        }
        if blocks.is_empty() {
            self.jacobian = jac;
            return false;
        }
        let mut value = crate::sym::SubstMap::default();
        for (rows, cols) in &blocks {
            let y_zero: crate::sym::SubstMap = cols.iter().map(|&c| (x[c], zero)).collect();
            let a: Vec<Vec<Id>> = rows
                .iter()
                .map(|&r| cols.iter().map(|&c| jac[r][c]).collect())
                .collect();
            let rhs: Vec<Vec<Id>> = rows
                .iter()
                .map(|&r| {
                    let c0 = g.substitute(self.residual[r], &y_zero);
                    vec![g.neg(c0)]
                })
                .collect();
            let Some(sol) = crate::sym::linsolve::solve(g, &a, &rhs) else {
                self.jacobian = jac;
                return false;
            };
            for (k, &c) in cols.iter().enumerate() {
                value.insert(x[c], sol[k][0]);
            }
        }
        let gone_rows: Vec<usize> = blocks.iter().flat_map(|(r, _)| r.iter().copied()).collect();
        let gone: Vec<usize> = blocks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        self.substitute_eliminated(&gone_rows, &gone, &value);
        true
    }

    /// The Jacobian's sparsity pattern, known symbolically: rows and unknowns
    /// are reordered together (reverse Cuthill–McKee on the pattern of
    /// `J + Jᵀ`, row `i` staying paired with unknown `i`) when that narrows
    /// the band enough for a banded LU to pay, and the band is recorded. Chains
    /// in maximal coordinates give block-tridiagonal multiplier systems whose
    /// band does not grow with the number of links.
    fn order_for_band(&mut self) {
        let n = self.unknowns.len();
        self.band = None;
        if n < 8 {
            return;
        }
        let nz = |g: &Graph, e: Id| !g.is_const(e, 0.0);
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            for j in 0..n {
                if i != j && (nz(&self.graph, self.jacobian[i][j]) || nz(&self.graph, self.jacobian[j][i])) {
                    adj[i].push(j);
                }
            }
        }
        let band_of = |order: &[usize]| -> (usize, usize) {
            let mut pos = vec![0usize; n];
            for (k, &o) in order.iter().enumerate() {
                pos[o] = k;
            }
            let (mut kl, mut ku) = (0, 0);
            for i in 0..n {
                for j in 0..n {
                    if nz(&self.graph, self.jacobian[i][j]) {
                        let (pi, pj) = (pos[i], pos[j]);
                        kl = kl.max(pi.saturating_sub(pj));
                        ku = ku.max(pj.saturating_sub(pi));
                    }
                }
            }
            (kl, ku)
        };
        let natural: Vec<usize> = (0..n).collect();
        let order = reverse_cuthill_mckee(&adj);
        let (b0, b1) = (band_of(&natural), band_of(&order));
        let pays = |(kl, ku): (usize, usize)| 2 * (kl + ku) + 2 < n;
        let (order, band) = if b1.0 + b1.1 < b0.0 + b0.1 {
            (order, b1)
        } else {
            (natural, b0)
        };
        if !pays(band) {
            return;
        }
        let take = |v: &[Id]| order.iter().map(|&k| v[k]).collect::<Vec<Id>>();
        self.residual = take(&self.residual);
        self.previous = take(&self.previous);
        self.predictor = take(&self.predictor);
        self.init_warm = take(&self.init_warm);
        let names = std::mem::take(&mut self.unknowns);
        self.unknowns = order.iter().map(|&k| names[k].clone()).collect();
        // Rows and unknowns move together: the Jacobian is permuted, not re-derived.
        self.jacobian = order
            .iter()
            .map(|&i| order.iter().map(|&j| self.jacobian[i][j]).collect())
            .collect();
        self.band = Some(band);
    }

    /// Eliminates the unknowns the residual gives explicitly: where row `i`
    /// is affine in unknown `x_j` with a coefficient `a = ∂R_i/∂x_j` that
    /// depends on parameters and the step size only (not on the unknowns,
    /// the state or the inputs, so it is the same non-zero number all run),
    /// `x_j = −R_i|_{x_j=0} / a` is substituted everywhere and row `i` and
    /// `x_j` leave the Newton system. Newton then iterates on the genuinely
    /// implicit unknowns only, as one would by hand (the sphere's averaged
    /// step: the momentum rows give `ξ⁺` explicitly). Rounds repeat while
    /// candidates remain; one round takes a set of pairs whose rows do not
    /// read each other's eliminated unknowns.
    pub fn eliminate_explicit(&mut self) {
        loop {
            let x: Vec<Id> = self.unknowns.iter().map(|s| s.sym).collect();
            if x.len() <= 1 {
                return;
            }
            let mut varying: Vec<Id> = x.clone();
            varying.extend(self.state.iter().map(|s| s.sym));
            varying.extend(self.exogenous.iter().map(|s| s.sym));
            let varying_set: std::collections::HashSet<Id> = varying.iter().copied().collect();
            let mut memo: std::collections::HashMap<Id, bool> = Default::default();
            let g = &mut self.graph;
            // Which rows read which unknowns, and the candidate pivots.
            let masks: Vec<Vec<bool>> = x.iter().map(|&xj| g.dependency_mask(&[xj])).collect();
            let reads = |row: Id, j: usize, masks: &Vec<Vec<bool>>| masks[j].get(row.index()).copied().unwrap_or(false);
            let mut chosen: Vec<(usize, usize, Id)> = Vec::new();
            for (i, &row) in self.residual.iter().enumerate() {
                if chosen.iter().any(|&(_, j, _)| reads(row, j, &masks)) {
                    continue;
                }
                for (j, &xj) in x.iter().enumerate() {
                    if !reads(row, j, &masks)
                        || chosen
                            .iter()
                            .any(|&(ci, cj, _)| cj == j || reads(self.residual[ci], j, &masks))
                    {
                        continue;
                    }
                    let a = crate::sym::Differentiator::new(xj).diff(g, row);
                    if g.is_const(a, 0.0) || g.as_const(a).is_some_and(|c| !c.is_finite()) {
                        continue;
                    }
                    if depends_memo(g, a, &varying_set, &mut memo) {
                        continue;
                    }
                    chosen.push((i, j, a));
                    break;
                }
            }
            if chosen.is_empty() {
                return;
            }
            // x_j = −R_i(x_j = 0) / a, in the remaining unknowns.
            let zero = g.constant(0.0);
            let mut value = crate::sym::SubstMap::default();
            for &(i, j, a) in &chosen {
                let mut m = crate::sym::SubstMap::default();
                m.insert(x[j], zero);
                let c = g.substitute(self.residual[i], &m);
                let nc = g.neg(c);
                value.insert(x[j], g.div(nc, a));
            }
            let gone_rows: Vec<usize> = chosen.iter().map(|&(i, _, _)| i).collect();
            let gone: Vec<usize> = chosen.iter().map(|&(_, j, _)| j).collect();
            self.substitute_eliminated(&gone_rows, &gone, &value);
        }
    }

    fn syms(slots: &[Slot]) -> Vec<Id> {
        slots.iter().map(|s| s.sym).collect()
    }

    /// The numeric functions a back-end must emit, all with arrays
    /// `p` (parameters), `h` (step size, length 1) and the state as inputs where needed.
    pub fn functions(&self) -> Vec<Function> {
        let p: Vec<Id> = self.params.iter().map(|(s, _)| s.sym).collect();
        let z = Self::syms(&self.state);
        let x = Self::syms(&self.unknowns);
        let q = Self::syms(&self.phys_q);
        let v = Self::syms(&self.phys_v);
        let inp = |items: &[(&str, &Vec<Id>)]| items.iter().map(|(n, s)| (n.to_string(), (*s).clone())).collect();
        let hv = vec![self.h];
        let e = Self::syms(&self.exogenous);
        // Free models keep their signatures: `e` is read only where it exists.
        let hot = |z: &Vec<Id>, xn: &'static str, x: &Vec<Id>| -> Vec<(String, Vec<Id>)> {
            let mut v = vec![("p".to_string(), p.clone()), ("h".to_string(), hv.clone())];
            if !e.is_empty() {
                v.push(("e".to_string(), e.clone()));
            }
            v.push(("z".to_string(), z.clone()));
            v.push((xn.to_string(), x.clone()));
            v
        };
        // Column-major, as nalgebra stores matrices: back-ends write it in place.
        let nx = self.jacobian.len();
        let flat_jac: Vec<Id> = (0..nx)
            .flat_map(|c| self.jacobian.iter().map(move |row| row[c]))
            .collect();
        let flat_obs: Vec<Id> = self.obs_matrix.iter().flatten().copied().collect();
        let mut fs = vec![
            Function {
                name: "residual".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![("r".into(), self.residual.clone())],
            },
            // Residual and Jacobian in one function, as Newton needs them:
            // the subexpressions they share are computed once (about 13 %
            // fewer operations on the double pendulum's Hamel step).
            Function {
                name: "residual_jacobian".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![("r".into(), self.residual.clone()), ("j".into(), flat_jac)],
            },
            Function {
                name: "increment".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![("dz".into(), self.update.clone())],
            },
            Function {
                name: "predict".into(),
                inputs: hot(&z, "w", &self.previous),
                outputs: vec![("x0".into(), self.predictor.clone())],
            },
            Function {
                name: "observe_system".into(),
                inputs: inp(&[("p", &p), ("z", &z)]),
                outputs: vec![("k".into(), flat_obs), ("b".into(), self.obs_rhs.clone())],
            },
            Function {
                name: "physical".into(),
                inputs: inp(&[("p", &p), ("z", &z), ("y", &self.obs_solution)]),
                outputs: vec![("q".into(), self.obs_q.clone()), ("v".into(), self.obs_v.clone())],
            },
            Function {
                name: "invariants".into(),
                inputs: inp(&[("p", &p), ("q", &q), ("v", &v)]),
                outputs: vec![("i".into(), self.invariants.iter().map(|i| i.expr).collect())],
            },
            Function {
                name: "init_state".into(),
                inputs: inp(&[("p", &p), ("q", &q), ("v", &v)]),
                outputs: vec![
                    ("z".into(), self.init_state.clone()),
                    ("x".into(), self.init_warm.clone()),
                ],
            },
        ];
        if let Some([rz, uz, ux]) = &self.sensitivity {
            let flat = |m: &Vec<Vec<Id>>| m.iter().flatten().copied().collect::<Vec<Id>>();
            fs.push(Function {
                name: "sensitivity_parts".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![
                    ("rz".into(), flat(rz)),
                    ("uz".into(), flat(uz)),
                    ("ux".into(), flat(ux)),
                ],
            });
        }
        if let Some([ru, uu]) = &self.input_sensitivity {
            let flat = |m: &Vec<Vec<Id>>| m.iter().flatten().copied().collect::<Vec<Id>>();
            fs.push(Function {
                name: "input_sensitivity_parts".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![("ru".into(), flat(ru)), ("uu".into(), flat(uu))],
            });
        }
        if let Some(w) = self.work {
            fs.push(Function {
                name: "work".into(),
                inputs: hot(&z, "x", &x),
                outputs: vec![("w".into(), vec![w])],
            });
        }
        for (name, iq, iv) in &self.initials {
            fs.push(Function {
                name: format!("initial_{name}"),
                inputs: inp(&[("p", &p)]),
                outputs: vec![("q".into(), iq.clone()), ("v".into(), iv.clone())],
            });
        }
        fs
    }
}

/// The scheme-specific part of a step system, in absolute unknowns; see
/// [`Draft::assemble`]. Symbols are created by the scheme in the model's graph.
pub struct Draft {
    /// scheme label
    pub scheme: String,
    /// step size symbol
    pub h: Id,
    /// state symbols and names
    pub state: Vec<(Id, String)>,
    /// unknown symbols and names
    pub unknowns: Vec<(Id, String)>,
    /// previous-solution symbols (one per unknown)
    pub previous: Vec<Id>,
    /// residual
    pub residual: Vec<Id>,
    /// `z'` (absolute)
    pub next: Vec<Id>,
    /// predictor (absolute unknowns)
    pub predictor: Vec<Id>,
    /// `z(q, ξ)`
    pub init_state: Vec<Id>,
    /// `x(q, ξ)`
    pub init_warm: Vec<Id>,
    /// observation matrix `K(z)` (empty: none)
    pub obs_matrix: Vec<Vec<Id>>,
    /// observation right-hand side
    pub obs_rhs: Vec<Id>,
    /// observation solution symbols
    pub obs_solution: Vec<Id>,
    /// `q(z)`
    pub obs_q: Vec<Id>,
    /// `ξ(z, y)`
    pub obs_v: Vec<Id>,
    /// unknown `i` becomes state component `base[i]` (see [`StepSystem::into_increment_form`])
    pub base: Vec<Option<usize>>,
    /// discrete work of the external force (absolute unknowns); `None` when free
    pub work: Option<Id>,
}

impl Draft {
    /// Completes the step system: parameters, physical symbols, invariants
    /// (energy first, then the model's, then constraint residuals), initial
    /// states, Jacobians, increment form.
    pub fn assemble(self, model: &Model, graph: Graph, energy: Id) -> StepSystem {
        let slot = |(sym, name): (Id, String)| Slot { name, sym };
        let mut invariants = vec![Invariant {
            name: "energy".into(),
            kind: InvariantKind::Energy,
            expr: energy,
        }];
        let kinds = super::invariants::classify(model, &graph);
        invariants.extend(model.invariants.iter().zip(kinds).map(|(i, kind)| Invariant {
            name: i.name.clone(),
            kind,
            expr: i.expr,
        }));
        invariants.extend(
            model
                .velocity_constraints
                .iter()
                .chain(&model.holonomic)
                .map(|c| Invariant {
                    name: c.name.clone(),
                    kind: InvariantKind::Constraint,
                    expr: c.expr,
                }),
        );
        // The hidden velocity constraint of each holonomic one, d/dt g(q) = ∇g · q'
        // (identity frames: the schemes that impose holonomic constraints need one).
        let mut graph = graph;
        if model.frame.is_none() {
            let (q, v) = (model.q_syms(), model.v_syms());
            for c in &model.holonomic {
                let grad = crate::sym::gradient(&mut graph, c.expr, &q);
                let rate = crate::sym::vector::dot(&mut graph, &grad, &v);
                invariants.push(Invariant {
                    name: format!("{} (velocity)", c.name),
                    kind: InvariantKind::HiddenConstraint,
                    expr: rate,
                });
            }
        }
        let forced = model.force.is_some() || !model.inputs.is_empty();
        let exogenous: Vec<Slot> = if forced {
            std::iter::once(Slot {
                name: "t".into(),
                sym: model.time,
            })
            .chain(model.inputs.iter().map(|s| Slot {
                name: s.name.clone(),
                sym: s.sym,
            }))
            .collect()
        } else {
            vec![]
        };
        let sys = StepSystem {
            model: model.name.clone(),
            scheme: self.scheme,
            exogenous,
            work: self.work,
            input_sensitivity: None,
            band: None,
            graph,
            params: model
                .params
                .iter()
                .map(|p| {
                    (
                        Slot {
                            name: p.name.clone(),
                            sym: p.sym,
                        },
                        p.default,
                    )
                })
                .collect(),
            h: self.h,
            state: self.state.into_iter().map(slot).collect(),
            unknowns: self.unknowns.into_iter().map(slot).collect(),
            previous: self.previous,
            residual: self.residual,
            jacobian: vec![],
            update: self.next,
            predictor: self.predictor,
            sensitivity: None,
            frame: None,
            phys_q: model
                .coords
                .iter()
                .map(|s| Slot {
                    name: s.name.clone(),
                    sym: s.sym,
                })
                .collect(),
            phys_v: model
                .vels
                .iter()
                .map(|s| Slot {
                    name: s.name.clone(),
                    sym: s.sym,
                })
                .collect(),
            init_state: self.init_state,
            init_warm: self.init_warm,
            obs_matrix: self.obs_matrix,
            obs_rhs: self.obs_rhs,
            obs_solution: self.obs_solution,
            obs_q: self.obs_q,
            obs_v: self.obs_v,
            invariants,
            initials: model
                .initials
                .iter()
                .map(|i| (i.name.clone(), i.q.clone(), i.v.clone()))
                .collect(),
            lets: model.lets.clone(),
        };
        sys.into_increment_form(&self.base)
    }
}

/// Fresh symbols `prefix0`, `prefix1`, … (scheme-internal names start with `__`,
/// which model files cannot use).
pub(crate) fn symbols(g: &mut Graph, prefix: &str, n: usize) -> Vec<Id> {
    (0..n).map(|i| g.symbol(&format!("{prefix}{i}"))).collect()
}

/// Reverse Cuthill–McKee ordering of an undirected graph given by adjacency
/// lists: breadth-first from a vertex of least degree, neighbours by
/// increasing degree, each component in turn, then reversed.
fn reverse_cuthill_mckee(adj: &[Vec<usize>]) -> Vec<usize> {
    let n = adj.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let start = (0..n)
            .filter(|&v| !seen[v])
            .min_by_key(|&v| adj[v].len())
            .expect("an unvisited vertex");
        seen[start] = true;
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            order.push(v);
            let mut next: Vec<usize> = adj[v].iter().copied().filter(|&w| !seen[w]).collect();
            next.sort_by_key(|&w| (adj[w].len(), w));
            for w in next {
                seen[w] = true;
                queue.push_back(w);
            }
        }
    }
    order.reverse();
    order
}

/// Whether `root` depends on one of `syms`, remembering every node visited
/// (nodes never change, so `memo` stays valid as the graph grows).
fn depends_memo(
    g: &Graph,
    root: Id,
    syms: &std::collections::HashSet<Id>,
    memo: &mut std::collections::HashMap<Id, bool>,
) -> bool {
    let mut stack = vec![(root, false)];
    while let Some((id, expanded)) = stack.pop() {
        if memo.contains_key(&id) {
            continue;
        }
        if syms.contains(&id) {
            memo.insert(id, true);
            continue;
        }
        let children = g.children(id);
        if expanded {
            let d = children.iter().any(|c| memo.get(c).copied().unwrap_or(false));
            memo.insert(id, d);
        } else {
            stack.push((id, true));
            stack.extend(
                children
                    .into_iter()
                    .filter(|c| !memo.contains_key(c))
                    .map(|c| (c, false)),
            );
        }
    }
    memo[&root]
}

/// The model's external force at other arguments: `q → qs`, `v → vs`, `t → t`,
/// `u → u`; `None` for a free model.
pub(crate) fn force_at(g: &mut Graph, model: &Model, qs: &[Id], vs: &[Id], t: Id, u: &[Id]) -> Option<Vec<Id>> {
    let f = model.force.as_ref()?;
    let map: crate::sym::SubstMap = model
        .q_syms()
        .into_iter()
        .zip(qs.iter().copied())
        .chain(model.v_syms().into_iter().zip(vs.iter().copied()))
        .chain(std::iter::once((model.time, t)))
        .chain(model.u_syms().into_iter().zip(u.iter().copied()))
        .collect();
    Some(g.substitute_all(f, &map))
}

/// `t + c h`: a time within the step.
pub(crate) fn time_in_step(g: &mut Graph, model: &Model, h: Id, c: f64) -> Id {
    if c == 0.0 {
        return model.time;
    }
    let ch = g.scale(c, h);
    g.add2(model.time, ch)
}

/// `⟨a, b⟩ · s`
pub(crate) fn scaled_dot(g: &mut Graph, a: &[Id], b: &[Id], s: Id) -> Id {
    let d = crate::sym::vector::dot(g, a, b);
    g.mul2(s, d)
}

/// Evaluates model expressions at other arguments: `q → qs`, `v → vs`.
pub(crate) fn at(g: &mut Graph, exprs: &[Id], q: &[Id], qs: &[Id], v: &[Id], vs: &[Id]) -> Vec<Id> {
    let map: crate::sym::SubstMap = q
        .iter()
        .copied()
        .zip(qs.iter().copied())
        .chain(v.iter().copied().zip(vs.iter().copied()))
        .collect();
    g.substitute_all(exprs, &map)
}
