//! The lowered, scalar model: what every scheme derives from.

use crate::dsl::ast::Ty;
use crate::sym::{Graph, Id};

/// A named scalar symbol of the model (a parameter, coordinate or velocity component).
#[derive(Clone, Debug)]
pub struct Scalar {
    /// display name, e.g. `gamma[0]` or `theta`
    pub name: String,
    /// its symbol node
    pub sym: Id,
}

/// A declared coordinate or velocity (scalar or 3-vector) and where its components start.
#[derive(Clone, Debug)]
pub struct Group {
    /// declared name
    pub name: String,
    /// declared type
    pub ty: Ty,
    /// index of its first component
    pub offset: usize,
}

/// A parameter with its default value.
#[derive(Clone, Debug)]
pub struct Param {
    /// name as in the model file, e.g. `m` or `m[2]`
    pub name: String,
    /// the struct field of the derive: the name, with `m[2]` written `m_2`
    pub field: String,
    /// its symbol node
    pub sym: Id,
    /// value from the model file
    pub default: f64,
}

/// A labelled scalar expression (constraint or invariant).
#[derive(Clone, Debug)]
pub struct Labelled {
    /// label shown in diagnostics and tables
    pub name: String,
    /// the expression
    pub expr: Id,
}

/// A named initial state: coordinates and velocities as expressions of the parameters.
#[derive(Clone, Debug)]
pub struct InitialState {
    /// its name
    pub name: String,
    /// one expression per coordinate component
    pub q: Vec<Id>,
    /// one expression per velocity component
    pub v: Vec<Id>,
}

/// The lowered model.
#[derive(Clone, Debug)]
pub struct Model {
    /// model name
    pub name: String,
    /// the model file's path as given
    pub file: String,
    /// all expressions
    pub graph: Graph,
    /// parameters, in file order
    pub params: Vec<Param>,
    /// coordinate components `q`
    pub coords: Vec<Scalar>,
    /// declared coordinates
    pub coord_groups: Vec<Group>,
    /// velocity components `ξ`
    pub vels: Vec<Scalar>,
    /// declared velocities
    pub vel_groups: Vec<Group>,
    /// `q' = f(q, ξ)` per coordinate component; `None` for the identity frame
    pub frame: Option<Vec<Id>>,
    /// `l(q, ξ)`
    pub lagrangian: Id,
    /// control input components `u`, set by the caller at each step
    pub inputs: Vec<Scalar>,
    /// declared inputs
    pub input_groups: Vec<Group>,
    /// the symbol of time `t`
    pub time: Id,
    /// the external force `F_e(q, ξ, u, t)`, one component per velocity
    /// (dual to `ξ`; to `q'` without a frame); `None` for a free model
    pub force: Option<Vec<Id>>,
    /// velocity constraints `A(q) ξ = 0`, as expressions
    pub velocity_constraints: Vec<Labelled>,
    /// holonomic constraints `g(q) = 0`, as expressions
    pub holonomic: Vec<Labelled>,
    /// user invariants (energy is added by the schemes)
    pub invariants: Vec<Labelled>,
    /// named initial states
    pub initials: Vec<InitialState>,
    /// the sizes of indexed families in force (`size N = ...`, possibly overridden)
    pub sizes: Vec<(String, i64)>,
    /// top-level `let` definitions in file order (`x[1]` for indexed ones): one
    /// expression for a scalar, three for a vector; tools evaluate them on runs
    pub lets: Vec<(String, Vec<Id>)>,
    /// a hash of the source text and the sizes this model was lowered from:
    /// equal for every load of the same file at the same sizes, by any
    /// build (hosts key kept derivations by it together with their build)
    pub source_hash: u64,
    /// the Lagrangian with indexed `let`s kept as symbols (see [`Tableau`]);
    /// `None` without indexed `let`s
    pub tableau: Option<Tableau>,
}

/// The Lagrangian written with every member of an indexed `let` family as a
/// symbol of its own, defined in terms of the model's symbols and earlier
/// members. Equal to [`Model::lagrangian`] once the definitions are
/// substituted; a scheme may instead keep the members as unknowns of its
/// step, where a family defined by a recurrence would otherwise couple all
/// of its members in every derived quantity.
#[derive(Clone, Debug)]
pub struct Tableau {
    /// a label and the symbol of each scalar member, in definition order
    pub symbols: Vec<(String, Id)>,
    /// each member's definition, reading only members defined before it
    pub definitions: Vec<Id>,
    /// `l` in the model's symbols and the members
    pub lagrangian: Id,
    /// the model's invariants in its symbols and the members, a component
    /// each, in the order of [`Model::invariants`]
    pub invariants: Vec<Id>,
}

impl Model {
    /// Symbol nodes of the coordinates.
    pub fn q_syms(&self) -> Vec<Id> {
        self.coords.iter().map(|s| s.sym).collect()
    }

    /// Symbol nodes of the velocities.
    pub fn v_syms(&self) -> Vec<Id> {
        self.vels.iter().map(|s| s.sym).collect()
    }

    /// Symbol nodes of the inputs.
    pub fn u_syms(&self) -> Vec<Id> {
        self.inputs.iter().map(|s| s.sym).collect()
    }

    /// Whether the Lagrangian or a holonomic constraint depends on time `t`
    /// (a rheonomic system): its steps then carry the time in their state.
    pub fn is_rheonomic(&self) -> bool {
        let t = [self.time];
        self.graph.depends_on(self.lagrangian, &t) || self.holonomic.iter().any(|c| self.graph.depends_on(c.expr, &t))
    }

    /// Looks up a parameter by name.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// The member of an indexed family (a `for i in …` block) a name was
/// unrolled from: the first index it carries (`e[12][1]`: 12, `dl/dv[3].x`:
/// 3); `None` for a name without one.
pub fn family_member(name: &str) -> Option<u32> {
    let open = name.find('[')?;
    let close = open + name[open..].find(']')?;
    name[open + 1..close].parse().ok()
}
