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

use hamel_kernel::{Arg, Exogenous, Kernel};

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
    /// scheme label, e.g. `hamel_averaged`
    pub scheme: String,
    /// which scheme derived it (set by [`super::Scheme::derive`]; `None` for
    /// a step assembled by hand)
    pub kind: Option<super::Scheme>,
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
    /// then `q = obs_q(z)`, `ξ = obs_v(z, y)`. `K` is given by its product
    /// with a direction (a host forms it a column at a time); empty means
    /// no solve. `b` may read its locals too.
    pub observation: crate::sym::Applied,
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
    /// unknowns a scheme added to keep the Jacobian sparse (a tableau's
    /// members, see [`crate::model::Tableau`]): the reductions do not
    /// substitute them back, which would make it dense again
    pub auxiliary: Vec<Id>,
    /// symbols the kernels of a physical state (its step state, invariants
    /// and health) compute from their definitions there, `(symbol,
    /// definition)` in order: a tableau's members and adjoints, which keep
    /// a chain's expressions O(N) where their expansion is O(N²) (see
    /// [`crate::sym::Function::locals`])
    pub physical_locals: Vec<(Id, Id)>,
    /// the kernels that judge a state (see [`StepSystem::add_health`]);
    /// `None` until derived
    pub health: Option<super::health::HealthKernels>,
    /// the momenta `p = ∂l/∂ξ` in the physical symbols (they may read
    /// [`StepSystem::physical_locals`]), where the scheme derived them
    /// through a tableau, or else affine in the velocities:
    /// [`StepSystem::add_health`] takes
    /// their derivative for the kinetic metric instead of differentiating
    /// the energy twice, which on a director chain builds O(N³) nodes
    pub momenta: Option<Vec<Id>>,
    /// for a rheonomic model (time in its Lagrangian or a holonomic
    /// constraint): the index of the state component that carries the time
    /// `t_k` of the state (the last), and the symbol of time in the
    /// invariants, which read it as argument [`Arg::T`]; `None` otherwise
    pub time: Option<(usize, Id)>,
}

impl StepSystem {
    /// Number of input components `u` (`e` holds `t`, then `u_k`).
    pub fn n_inputs(&self) -> usize {
        Exogenous::of_len(self.exogenous.len()).inputs
    }

    /// `(row, column)` of the Jacobian's entries that are not the constant
    /// zero, column by column, where it is banded (empty where dense): a
    /// banded LU then works on these and their fill-in only.
    pub fn jacobian_pattern(&self) -> Vec<(u32, u32)> {
        if self.band.is_none() {
            return Vec::new();
        }
        let n = self.jacobian.len();
        (0..n)
            .flat_map(|c| (0..n).map(move |r| (r, c)))
            .filter(|&(r, c)| !self.graph.is_const(self.jacobian[r][c], 0.0))
            .map(|(r, c)| (r as u32, c as u32))
            .collect()
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
            let u: Vec<Id> = self.exogenous[Exogenous::of_len(self.exogenous.len()).input_range()]
                .iter()
                .map(|s| s.sym)
                .collect();
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
        self.auxiliary = self.auxiliary.iter().map(|a| map_x[a]).collect();
        super::reduce::run(&mut self);
        self
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
        let inp = |items: &[(Arg, &Vec<Id>)]| items.iter().map(|(n, s)| (*n, (*s).clone())).collect();
        let hv = vec![self.h];
        let e = Self::syms(&self.exogenous);
        // Free models keep their signatures: `e` is read only where it exists.
        let hot = |z: &Vec<Id>, xn: Arg, x: &Vec<Id>| -> Vec<(Arg, Vec<Id>)> {
            let mut v = vec![(Arg::P, p.clone()), (Arg::H, hv.clone())];
            if !e.is_empty() {
                v.push((Arg::E, e.clone()));
            }
            v.push((Arg::Z, z.clone()));
            v.push((xn, x.clone()));
            v
        };
        // Column-major, as nalgebra stores matrices: back-ends write it in place.
        let nx = self.jacobian.len();
        let flat_jac: Vec<Id> = (0..nx)
            .flat_map(|c| self.jacobian.iter().map(move |row| row[c]))
            .collect();
        let mut fs = vec![
            Function {
                name: Kernel::Residual,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![("r".into(), self.residual.clone())],
                locals: Vec::new(),
            },
            // Residual and Jacobian in one function, as Newton needs them:
            // the subexpressions they share are computed once (about 13 %
            // fewer operations on the double pendulum's Hamel step).
            Function {
                name: Kernel::ResidualJacobian,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![("r".into(), self.residual.clone()), ("j".into(), flat_jac)],
                locals: Vec::new(),
            },
            Function {
                name: Kernel::Increment,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![("dz".into(), self.update.clone())],
                locals: Vec::new(),
            },
            Function {
                name: Kernel::Predict,
                inputs: hot(&z, Arg::W, &self.previous),
                outputs: vec![("x0".into(), self.predictor.clone())],
                locals: Vec::new(),
            },
            Function {
                name: Kernel::ObserveSystem,
                inputs: inp(&[(Arg::P, &p), (Arg::Z, &z), (Arg::U, &self.observation.direction)]),
                outputs: vec![
                    ("ku".into(), self.observation.product.clone()),
                    ("b".into(), self.obs_rhs.clone()),
                ],
                locals: self.observation.locals.clone(),
            },
            Function {
                name: Kernel::Physical,
                inputs: inp(&[(Arg::P, &p), (Arg::Z, &z), (Arg::Y, &self.obs_solution)]),
                outputs: vec![("q".into(), self.obs_q.clone()), ("v".into(), self.obs_v.clone())],
                locals: Vec::new(),
            },
            Function {
                name: Kernel::Invariants,
                inputs: match self.time {
                    Some((_, t)) => inp(&[(Arg::P, &p), (Arg::Q, &q), (Arg::V, &v), (Arg::T, &vec![t])]),
                    None => inp(&[(Arg::P, &p), (Arg::Q, &q), (Arg::V, &v)]),
                },
                outputs: vec![("i".into(), self.invariants.iter().map(|i| i.expr).collect())],
                locals: self.physical_locals.clone(),
            },
            Function {
                name: Kernel::InitState,
                inputs: inp(&[(Arg::P, &p), (Arg::Q, &q), (Arg::V, &v)]),
                outputs: vec![
                    ("z".into(), self.init_state.clone()),
                    ("x".into(), self.init_warm.clone()),
                ],
                locals: self.physical_locals.clone(),
            },
        ];
        if let Some([rz, uz, ux]) = &self.sensitivity {
            let flat = |m: &Vec<Vec<Id>>| m.iter().flatten().copied().collect::<Vec<Id>>();
            fs.push(Function {
                name: Kernel::SensitivityParts,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![
                    ("rz".into(), flat(rz)),
                    ("uz".into(), flat(uz)),
                    ("ux".into(), flat(ux)),
                ],
                locals: Vec::new(),
            });
        }
        if let Some([ru, uu]) = &self.input_sensitivity {
            let flat = |m: &Vec<Vec<Id>>| m.iter().flatten().copied().collect::<Vec<Id>>();
            fs.push(Function {
                name: Kernel::InputSensitivityParts,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![("ru".into(), flat(ru)), ("uu".into(), flat(uu))],
                locals: Vec::new(),
            });
        }
        if let Some(h) = &self.health {
            fs.push(Function {
                name: Kernel::Metric,
                inputs: inp(&[(Arg::P, &p), (Arg::Q, &q), (Arg::V, &v), (Arg::U, &h.metric.direction)]),
                outputs: vec![("ku".into(), h.metric.product.clone())],
                locals: self.physical_locals.iter().chain(&h.metric.locals).copied().collect(),
            });
            if let Some((_, _, f)) = &h.frame_check {
                fs.push(Function {
                    name: Kernel::FrameCheck,
                    inputs: inp(&[(Arg::P, &p), (Arg::Q, &q), (Arg::V, &v)]),
                    outputs: vec![("f".into(), f.clone())],
                    locals: self.physical_locals.clone(),
                });
            }
        }
        if let Some(w) = self.work {
            fs.push(Function {
                name: Kernel::Work,
                inputs: hot(&z, Arg::X, &x),
                outputs: vec![("w".into(), vec![w])],
                locals: Vec::new(),
            });
        }
        for (i, (_, iq, iv)) in self.initials.iter().enumerate() {
            fs.push(Function {
                name: Kernel::Initial(i),
                inputs: inp(&[(Arg::P, &p)]),
                outputs: vec![("q".into(), iq.clone()), ("v".into(), iv.clone())],
                locals: Vec::new(),
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
    /// observation matrix `K(z)` (empty: none, or given by `obs_applied`)
    pub obs_matrix: Vec<Vec<Id>>,
    /// the observation matrix by its product with a direction, where the
    /// scheme forms that instead of the matrix (see
    /// [`StepSystem::observation`])
    pub obs_applied: Option<crate::sym::Applied>,
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
    /// energy supplied over the step (absolute unknowns): the discrete work
    /// of the external force and, for a rheonomic model, of the explicit
    /// time dependence (see [`power`]); `None` when free
    pub work: Option<Id>,
    /// unknowns the scheme added to keep the Jacobian sparse (see
    /// [`StepSystem::auxiliary`])
    pub auxiliary: Vec<Id>,
    /// `∂p/∂ξ` (row-major, in the physical symbols) where the scheme
    /// derived it: the classification of the model's invariants evaluates
    /// it instead of differentiating the momenta at each point
    pub kinetic_metric: Option<Vec<Vec<Id>>>,
    /// see [`StepSystem::momenta`]
    pub momenta: Option<Vec<Id>>,
    /// the frame and free motion where the scheme derived them from the
    /// model as written (see `invariants::classify`)
    pub(crate) free_motion: Option<super::mechanics::FreeMotion>,
    /// see [`StepSystem::physical_locals`]
    pub physical_locals: Vec<(Id, Id)>,
}

impl Draft {
    /// Completes the step system: parameters, physical symbols, invariants
    /// (energy first, then the model's, then constraint residuals), initial
    /// states, Jacobians, increment form.
    pub fn assemble(self, model: &Model, graph: Graph, energy: Id) -> StepSystem {
        let slot = |(sym, name): (Id, String)| Slot { name, sym };
        let free = self.free_motion.as_ref();
        let (invariants, mut graph) = monitored(model, graph, energy, self.kinetic_metric.as_deref(), free);
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
        let mut d = self;
        let time = d.carry_time(&mut graph, model);
        let observation = match d.obs_applied.take() {
            Some(a) => a,
            None => crate::sym::Applied::of_rows(&mut graph, &d.obs_matrix, "__ou"),
        };
        let sys = StepSystem {
            model: model.name.clone(),
            scheme: d.scheme,
            kind: None,
            exogenous,
            work: d.work,
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
            h: d.h,
            state: d.state.into_iter().map(slot).collect(),
            unknowns: d.unknowns.into_iter().map(slot).collect(),
            previous: d.previous,
            residual: d.residual,
            jacobian: vec![],
            update: d.next,
            predictor: d.predictor,
            sensitivity: None,
            frame: None,
            health: None,
            momenta: d.momenta,
            time,
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
            init_state: d.init_state,
            init_warm: d.init_warm,
            observation,
            obs_rhs: d.obs_rhs,
            obs_solution: d.obs_solution,
            obs_q: d.obs_q,
            obs_v: d.obs_v,
            invariants,
            initials: model
                .initials
                .iter()
                .map(|i| (i.name.clone(), i.q.clone(), i.v.clone()))
                .collect(),
            lets: model.lets.clone(),
            auxiliary: d.auxiliary,
            physical_locals: d.physical_locals,
        };
        sys.into_increment_form(&d.base)
    }

    /// A rheonomic model's time rides in the state (see the comment inside);
    /// `Some((slot, time symbol))` then, `None` for a model without time.
    fn carry_time(&mut self, graph: &mut Graph, model: &Model) -> Option<(usize, Id)> {
        if !rheonomic(graph, model) {
            return None;
        }
        // The time rides in the state: t_{k+1} = t_k + h. The kernels
        // that recover the physical state and its invariants away from
        // a step (and not only the step, which also has `e`) then know
        // the time of the state they are given, and a composed step's
        // sub-steps advance it by their own γ_i h. Schemes write the
        // step in terms of the model's time symbol standing for t_k; it
        // becomes that state component here, and 0 at the initial state.
        let tz = graph.symbol("__tz");
        let to_state: crate::sym::SubstMap = [(model.time, tz)].into_iter().collect();
        let zero = graph.constant(0.0);
        let to_start: crate::sym::SubstMap = [(model.time, zero)].into_iter().collect();
        let g = &mut *graph;
        self.residual = g.substitute_all(&self.residual, &to_state);
        self.next = g.substitute_all(&self.next, &to_state);
        self.predictor = g.substitute_all(&self.predictor, &to_state);
        self.work = self.work.map(|w| g.substitute_all(&[w], &to_state)[0]);
        self.obs_matrix = self.obs_matrix.iter().map(|r| g.substitute_all(r, &to_state)).collect();
        self.obs_applied = self.obs_applied.as_ref().map(|a| a.substitute(g, &to_state));
        self.obs_rhs = g.substitute_all(&self.obs_rhs, &to_state);
        self.obs_q = g.substitute_all(&self.obs_q, &to_state);
        self.obs_v = g.substitute_all(&self.obs_v, &to_state);
        self.init_state = g.substitute_all(&self.init_state, &to_start);
        self.init_warm = g.substitute_all(&self.init_warm, &to_start);
        self.state.push((tz, "t".into()));
        let next_t = g.add2(tz, self.h);
        self.next.push(next_t);
        self.init_state.push(zero);
        Some((self.state.len() - 1, model.time))
    }
}

/// The quantities a run monitors: the energy, the model's invariants (their
/// kind decided from what each is), its constraints and, in generalized
/// coordinates, each holonomic constraint's hidden velocity constraint.
fn monitored(
    model: &Model,
    graph: Graph,
    energy: Id,
    metric: Option<&[Vec<Id>]>,
    free: Option<&super::mechanics::FreeMotion>,
) -> (Vec<Invariant>, Graph) {
    let mut invariants = vec![Invariant {
        name: "energy".into(),
        kind: InvariantKind::Energy,
        expr: energy,
    }];
    let kinds = super::invariants::classify(model, &graph, metric, free);
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
    // The hidden velocity constraint of each holonomic one, d/dt g(q, t) =
    // ∇g · q' + ∂g/∂t (identity frames: the schemes that impose holonomic
    // constraints need one).
    let mut graph = graph;
    if model.frame.is_none() {
        let (q, v) = (model.q_syms(), model.v_syms());
        for c in &model.holonomic {
            let grad = crate::sym::gradient(&mut graph, c.expr, &q);
            let rate = crate::sym::vector::dot(&mut graph, &grad, &v);
            let gt = crate::sym::gradient(&mut graph, c.expr, &[model.time])[0];
            let rate = graph.add2(rate, gt);
            invariants.push(Invariant {
                name: format!("{} (velocity)", c.name),
                kind: InvariantKind::HiddenConstraint,
                expr: rate,
            });
        }
    }
    (invariants, graph)
}

/// Whether the model's Lagrangian or a holonomic constraint depends on time,
/// in `g` (the model's graph, which schemes take out of the model).
pub(crate) fn rheonomic(g: &Graph, model: &Model) -> bool {
    let t = [model.time];
    g.depends_on(model.lagrangian, &t) || model.holonomic.iter().any(|c| g.depends_on(c.expr, &t))
}

/// Model expressions at time `t` (the model's time symbol stands for the
/// step's start `t_k` until [`Draft::assemble`] puts it in the state). For
/// expressions already evaluated at stage values that may depend on the
/// time themselves, use [`at_qvt`].
pub(crate) fn at_time(g: &mut Graph, model: &Model, exprs: &[Id], t: Id) -> Vec<Id> {
    if t == model.time {
        return exprs.to_vec();
    }
    let map: crate::sym::SubstMap = [(model.time, t)].into_iter().collect();
    g.substitute_all(exprs, &map)
}

/// Model expressions at `q → qs`, `v → vs` and time `t`, in one
/// substitution: `qs` may itself depend on the time of the step's start (an
/// explicit stage, RATTLE's `q_{n+1}(λ)`), which a second substitution of
/// the time would move too.
#[allow(clippy::too_many_arguments)]
pub(crate) fn at_qvt(
    g: &mut Graph,
    model: &Model,
    exprs: &[Id],
    q: &[Id],
    qs: &[Id],
    v: &[Id],
    vs: &[Id],
    t: Id,
) -> Vec<Id> {
    let map: crate::sym::SubstMap = q
        .iter()
        .copied()
        .zip(qs.iter().copied())
        .chain(v.iter().copied().zip(vs.iter().copied()))
        .chain(std::iter::once((model.time, t)))
        .collect();
    g.substitute_all(exprs, &map)
}

/// `∂f/∂t` of each expression.
pub(crate) fn time_derivative(g: &mut Graph, model: &Model, exprs: &[Id]) -> Vec<Id> {
    exprs
        .iter()
        .map(|&e| crate::sym::gradient(g, e, &[model.time])[0])
        .collect()
}

/// The sum of the energy supplied over a step by the forces (`a`) and by
/// the explicit time dependence (`b`), either possibly absent.
pub(crate) fn power(g: &mut Graph, a: Option<Id>, b: Option<Id>) -> Option<Id> {
    match (a, b) {
        (Some(a), Some(b)) => Some(g.add2(a, b)),
        (a, b) => a.or(b),
    }
}

/// Fresh symbols `prefix0`, `prefix1`, … (scheme-internal names start with `__`,
/// which model files cannot use).
pub(crate) fn symbols(g: &mut Graph, prefix: &str, n: usize) -> Vec<Id> {
    (0..n).map(|i| g.symbol(&format!("{prefix}{i}"))).collect()
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
