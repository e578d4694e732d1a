//! Hamel frames: the matrix `Ψ(q)` and the frame bracket coefficients
//! `c^c_ab(q)` (docs/schemes.md §1; theory §1.1): constant frames (identity,
//! translations), linear and affine actions, square invertible frames, and
//! products of those over blocks of coordinates.

use std::collections::{BTreeMap, HashMap};

use crate::model::Model;
use crate::sym::{jacobian, linsolve, Differentiator, Graph, Id, Node};

/// How the bracket coefficients were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// `q' = ξ`, or any constant `Ψ` (translations): all brackets vanish.
    Identity,
    /// `Ψ(q) ξ = Σ ξ^a A_a q` with constant matrices `A_a`.
    LinearAction,
    /// `Ψ(q) ξ = Σ ξ^a (A_a q + b_a)` with constant `A_a`, `b_a`, some `b_a ≠ 0`
    /// and some `A_a ≠ 0` (translations and rotations, SE(2), SE(3), a cart
    /// carrying a pendulum).
    AffineAction,
    /// `Ψ(q)` square and invertible: `c(q) = Ψ⁻¹ [u_a, u_b]`.
    Invertible,
    /// Blocks of coordinates, each moved only by its own velocities with
    /// coefficients free of the other blocks' coordinates; see [`Frame::blocks`].
    Product,
}

/// One block of a frame: coordinates, the velocities that move them, and the
/// rule that gave their brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// indices into the model's coordinates
    pub coordinates: Vec<usize>,
    /// indices into the model's velocities
    pub velocities: Vec<usize>,
    /// the rule that applied to this block
    pub kind: FrameKind,
}

/// `Ψ(q)` and the bracket coefficients of a model's frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// which construction applied
    pub kind: FrameKind,
    /// `Ψ[i][a]`: component `i` of the frame field `u_a`, in the model's coordinates
    pub psi: Vec<Vec<Id>>,
    /// `c^c_ab` with `[u_a, u_b] = c^c_ab u_c`, those not identically zero
    pub c: Brackets,
    /// the blocks the frame splits into (one block unless `kind` is `Product`)
    pub blocks: Vec<Block>,
}

/// Why a frame's brackets could not be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError(pub String);

/// Deterministic sample points for numeric identity checks.
fn sample(k: usize, i: usize) -> f64 {
    let x = ((k * 7919 + i * 104_729 + 13) % 1000) as f64 / 1000.0;
    0.3 + 1.1 * x
}

/// What to write instead when no rule fits.
const FRAME_ADVICE: &str = "write rotations as cross products on directors or on the rows of R (`e' = cross(w, e)`, `Gamma' = cross(Gamma, Omega)`), translations as `x' = vx`, and give each body its own velocities; or use coordinates in which Ψ is square and invertible (angles with body velocities, `x' = cos(th) * u - sin(th) * v, …`)";

impl Frame {
    /// Analyses the model's frame.
    pub fn of(model: &mut Model) -> Result<Frame, FrameError> {
        let q = model.q_syms();
        let v = model.v_syms();
        let (n, m) = (q.len(), v.len());
        let g = &mut model.graph;
        let Some(f) = model.frame.clone() else {
            let one = g.constant(1.0);
            let zero = g.constant(0.0);
            let psi = (0..n)
                .map(|i| (0..m).map(|a| if i == a { one } else { zero }).collect())
                .collect();
            return Ok(Frame {
                kind: FrameKind::Identity,
                psi,
                c: Brackets::default(),
                blocks: vec![Block {
                    coordinates: (0..n).collect(),
                    velocities: (0..m).collect(),
                    kind: FrameKind::Identity,
                }],
            });
        };
        let psi = jacobian(g, &f, &v);
        // The whole frame first: every frame that had brackets before blocks
        // were known keeps exactly the same ones.
        let whole = match rule(g, &psi, &q, &v) {
            Ok((kind, c)) => {
                return Ok(Frame {
                    kind,
                    psi,
                    c,
                    blocks: vec![Block {
                        coordinates: (0..n).collect(),
                        velocities: (0..m).collect(),
                        kind,
                    }],
                })
            }
            Err(why) => why,
        };
        let mut blocks = split(g, &psi, &q);
        if blocks.len() < 2 {
            return Err(FrameError(format!(
                "the frame fits none of the rules (theory §1.1): {}; and its coordinates do not split into blocks each moved only by its own velocities. {FRAME_ADVICE}",
                whole.join("; ")
            )));
        }
        let mut c = Brackets::default();
        for block in &mut blocks {
            if block.coordinates.is_empty() || block.velocities.is_empty() {
                // Velocities that move nothing, or coordinates nothing moves:
                // no brackets (the runtime names velocities that move nothing).
                block.kind = FrameKind::Identity;
                continue;
            }
            let sub: Vec<Vec<Id>> = block
                .coordinates
                .iter()
                .map(|&i| block.velocities.iter().map(|&a| psi[i][a]).collect())
                .collect();
            let sq: Vec<Id> = block.coordinates.iter().map(|&i| q[i]).collect();
            let sv: Vec<Id> = block.velocities.iter().map(|&a| v[a]).collect();
            match rule(g, &sub, &sq, &sv) {
                Ok((kind, sc)) => {
                    block.kind = kind;
                    let vs = &block.velocities;
                    for &(a, b, cc, x) in &sc.0 {
                        c.0.push((vs[a], vs[b], vs[cc], x));
                    }
                }
                Err(why) => {
                    let names = |ids: Vec<Id>| ids.iter().map(|&s| g.display(s)).collect::<Vec<_>>().join(", ");
                    let coords = names(sq.clone());
                    let vels = names(sv.clone());
                    return Err(FrameError(format!(
                        "the frame splits into blocks, but the block of coordinates {coords} with velocities {vels} fits none of the rules (theory §1.1): {}. {FRAME_ADVICE}",
                        why.join("; ")
                    )));
                }
            }
        }
        c.0.sort_unstable_by_key(|&(a, b, cc, _)| (a, b, cc));
        Ok(Frame {
            kind: FrameKind::Product,
            psi,
            c,
            blocks,
        })
    }

    /// The frame bracket `[ξ, η]_q` as expressions.
    pub fn bracket(&self, g: &mut Graph, xi: &[Id], eta: &[Id]) -> Vec<Id> {
        // Row c collects its terms in (a, b) order.
        self.sums(g, xi, eta, |b, c| (c, b))
    }

    /// The dual bracket `[ξ, μ]*_q`, `([ξ, μ]*)_b = c^c_ab ξ^a μ_c`.
    pub fn co_bracket(&self, g: &mut Graph, xi: &[Id], mu: &[Id]) -> Vec<Id> {
        // Entry b collects its terms in (a, c) order.
        self.sums(g, xi, mu, |b, c| (b, c))
    }

    /// `out[r] = Σ c^c_ab ξ^a y_j` over the coefficients that `place(b, c)`
    /// sends to `(r, j)`, terms in (a, j) order, rows in turn: the order
    /// (and so the node numbers) of the dense loops over every index.
    fn sums(&self, g: &mut Graph, xi: &[Id], y: &[Id], place: impl Fn(usize, usize) -> (usize, usize)) -> Vec<Id> {
        let mut rows: Vec<Vec<(usize, usize, Id)>> = vec![Vec::new(); xi.len()];
        for &(a, b, c, x) in &self.c.0 {
            let (r, j) = place(b, c);
            rows[r].push((a, j, x));
        }
        rows.into_iter()
            .map(|row| {
                let terms: Vec<Id> = row.into_iter().map(|(a, j, x)| g.mul(&[x, xi[a], y[j]])).collect();
                g.add(&terms)
            })
            .collect()
    }
}

/// The bracket coefficients `c^c_ab` of a frame (`[u_a, u_b] = c^c_ab u_c`)
/// that are not identically zero, as `(a, b, c, c^c_ab)` in `(a, b, c)`
/// order. A chain's frame has O(m) of the m³: the dense table of a 256-link
/// chain's 768 velocities held 453 million entries (1.8 GB), and the loops
/// over it took most of its derivation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Brackets(pub Vec<(usize, usize, usize, Id)>);

impl Brackets {
    /// The non-zero entries of a dense table `c[c][a][b]`.
    fn from_dense(g: &Graph, c: &[Vec<Vec<Id>>]) -> Self {
        let m = c.len();
        let mut out = Vec::new();
        for a in 0..m {
            for b in 0..m {
                for (cc, plane) in c.iter().enumerate() {
                    if !g.is_const(plane[a][b], 0.0) {
                        out.push((a, b, cc, plane[a][b]));
                    }
                }
            }
        }
        Brackets(out)
    }

    /// `c^c_ab`, where it is not identically zero.
    pub fn get(&self, c: usize, a: usize, b: usize) -> Option<Id> {
        self.0
            .binary_search_by_key(&(a, b, c), |&(a, b, c, _)| (a, b, c))
            .ok()
            .map(|k| self.0[k].3)
    }
}

/// The rule that fits a frame (or one block of it), with its brackets; or
/// why each rule failed.
fn rule(g: &mut Graph, psi: &[Vec<Id>], q: &[Id], v: &[Id]) -> Result<(FrameKind, Brackets), Vec<String>> {
    let mut why = Vec::new();
    match action(g, psi, q, v) {
        Ok(found) => return Ok(found),
        Err(e) => why.push(e),
    }
    let (n, m) = (q.len(), v.len());
    if n != m {
        why.push(format!(
            "it is not square ({n} coordinates, {m} velocities), so it is not an invertible frame"
        ));
        return Err(why);
    }
    if singular_everywhere(g, psi) {
        why.push(
            "it is square but Ψ(q) is singular at every sampled configuration, so it is not an invertible frame".into(),
        );
        return Err(why);
    }
    match invertible(g, psi, q) {
        Ok(c) => Ok((FrameKind::Invertible, Brackets::from_dense(g, &c))),
        Err(e) => {
            why.push(e);
            Err(why)
        }
    }
}

/// Symbol number of a symbol node.
fn symbol_number(g: &Graph, s: Id) -> Option<u32> {
    match g.node(s) {
        Node::Sym(k) => Some(*k),
        _ => None,
    }
}

/// Constant matrices `A_a` and vectors `b_a` with `Ψ(q)[:, a] = A_a q + b_a`,
/// if the frame has that form, and the brackets from the linear action of
/// `Â_a = [[A_a, b_a], [0, 0]]` on `(q, 1)` (just `A_a` on `q` when every
/// `b_a` vanishes).
///
/// The matrices are kept sparse: a chain's frame acts on each link's
/// coordinates alone, and dense `d × d` matrices made this O(m² d³), minutes
/// at 48 links.
fn action(g: &mut Graph, psi: &[Vec<Id>], q: &[Id], v: &[Id]) -> Result<(FrameKind, Brackets), String> {
    let (n, m) = (q.len(), v.len());
    let qsym: Vec<Option<u32>> = q.iter().map(|&s| symbol_number(g, s)).collect();
    let not_affine = |g: &Graph, i: usize, a: usize| {
        format!(
            "it is not an action q' = Σ ξ^a (A_a q + b_a) with constant A_a, b_a (the coefficient of `{}` in `{}'` is not affine in the coordinates with numeric coefficients)",
            g.display(v[a]),
            g.display(q[i])
        )
    };
    // Coordinate `j` of each symbol, and the coordinates at the samples.
    let coordinate: HashMap<u32, usize> = qsym.iter().enumerate().filter_map(|(j, s)| s.map(|s| (s, j))).collect();
    let qv: Vec<Vec<f64>> = (0..3)
        .map(|k| q.iter().map(|&e| g.eval(e, &|s| sample(k, s as usize))).collect())
        .collect();
    let at_zero = |s: u32| {
        if qsym.contains(&Some(s)) {
            0.0
        } else {
            sample(0, s as usize)
        }
    };
    // Rows of A_a: (j, A_a[i][j]) for the coordinates entry (i, a) reads.
    let mut lin: Vec<Vec<Vec<(usize, f64)>>> = Vec::with_capacity(m);
    let mut aff: Vec<Vec<f64>> = Vec::with_capacity(m); // b_a
    for a in 0..m {
        // A chain's frame moves each link's coordinates by its own
        // velocities: the column's other entries are zero, and looking at
        // each of them made this O(m n) (a sixth of a 256-link derivation).
        let moved: Vec<usize> = (0..n).filter(|&i| !g.is_const(psi[i][a], 0.0)).collect();
        let mut rows = vec![Vec::new(); n];
        for &i in &moved {
            let row = &mut rows[i];
            let e = psi[i][a];
            for j in symbols(g, e).into_iter().filter_map(|s| coordinate.get(&s).copied()) {
                let d = Differentiator::new(q[j]).diff(g, e);
                match g.as_const(d) {
                    Some(0.0) => {}
                    Some(c) => row.push((j, c)),
                    None => return Err(not_affine(g, i, a)),
                }
            }
            row.sort_by_key(|&(j, _)| j);
        }
        // b_a is the field at q = 0; it must make Ψ[:, a] = A_a q + b_a hold
        // everywhere (a parameter in b_a does not).
        let mut b = vec![0.0; n];
        for &i in &moved {
            b[i] = g.eval(psi[i][a], &at_zero);
        }
        for (k, qk) in qv.iter().enumerate() {
            for &i in &moved {
                let lhs = g.eval(psi[i][a], &|s| sample(k, s as usize));
                let rhs: f64 = rows[i].iter().map(|&(j, c)| c * qk[j]).sum::<f64>() + b[i];
                let off = (lhs - rhs).abs();
                if off.is_nan() || off > 1e-12 * (1.0 + lhs.abs()) {
                    return Err(not_affine(g, i, a));
                }
            }
        }
        lin.push(rows);
        aff.push(b);
    }
    let affine = aff.iter().flatten().any(|&x| x != 0.0);
    let constant = lin.iter().flatten().all(|row| row.is_empty());
    // Â_a as its non-zero entries ((row, column), value), d × d: A_a itself
    // for a linear action, so those brackets are the ones computed before
    // affine actions were known.
    let d = if affine { n + 1 } else { n };
    let mats: Vec<Vec<((usize, usize), f64)>> = (0..m)
        .map(|a| {
            let mut entries = Vec::new();
            for i in 0..n {
                entries.extend(lin[a][i].iter().map(|&(j, c)| ((i, j), c)));
                if affine && aff[a][i] != 0.0 {
                    entries.push(((i, n), aff[a][i]));
                }
            }
            entries
        })
        .collect();
    let mut c = Brackets::default();
    // Which matrices have an entry at each position, and which touch each
    // index (row or column): fields touching disjoint indices commute.
    let mut at: BTreeMap<(usize, usize), Vec<(usize, f64)>> = BTreeMap::new();
    let mut touching: Vec<Vec<usize>> = vec![Vec::new(); d];
    for (a, entries) in mats.iter().enumerate() {
        for &((i, j), x) in entries {
            at.entry((i, j)).or_default().push((a, x));
            for t in [i, j] {
                if touching[t].last() != Some(&a) {
                    touching[t].push(a);
                }
            }
        }
    }
    // Solve [Â_a, Â_b] = -c^c_ab Â_c in the span of the Â_c (least squares
    // via normal equations), the Gram matrix factored once, when first
    // needed. It is block diagonal (matrices with no entry in common are
    // orthogonal): each block is factored alone (a chain's are a link's
    // fields), where the dense m × m solve per bracket took a sixth of a
    // 256-link derivation.
    let mut gram: Option<Option<GramBlocks>> = None;
    let gram_of = || GramBlocks::factor(m, &at);
    for a in 0..m {
        let mut partners: Vec<usize> = mats[a]
            .iter()
            .flat_map(|&((i, j), _)| touching[i].iter().chain(&touching[j]).copied())
            .collect();
        partners.sort_unstable();
        partners.dedup();
        for b in partners {
            let comm = commutator(&mats[a], &mats[b]);
            if comm.values().all(|&x| x == 0.0) {
                continue;
            }
            let mut rhs = vec![0.0; m];
            for (pos, &x) in &comm {
                for &(cc, y) in at.get(pos).map_or(&[][..], |l| &l[..]) {
                    rhs[cc] -= y * x;
                }
            }
            let lu = gram.get_or_insert_with(&gram_of).as_ref().ok_or_else(|| {
                "it has the form of an action, but its matrices are linearly dependent (choose independent quasi-velocities)"
                    .to_string()
            })?;
            let coef = lu.solve(&rhs);
            let mut back: BTreeMap<(usize, usize), f64> = comm.keys().map(|&k| (k, 0.0)).collect();
            for (cc, &x) in coef.iter().enumerate() {
                if x != 0.0 {
                    for &(pos, y) in &mats[cc] {
                        *back.entry(pos).or_insert(0.0) -= x * y;
                    }
                }
            }
            for (pos, &y) in &back {
                let x = comm.get(pos).copied().unwrap_or(0.0);
                if (y - x).abs() > 1e-9 * (1.0 + x.abs()) {
                    return Err(format!(
                        "it has the form of an action, but the bracket of the fields of `{}` and `{}` is not in the span of the frame, so it is not a Lie algebra action",
                        g.display(v[a]),
                        g.display(v[b])
                    ));
                }
            }
            for (cc, &x) in coef.iter().enumerate() {
                // The coefficients are exact small rationals in practice; round off the solve's noise.
                let r = (x * 1e9).round() / 1e9;
                if r != 0.0 {
                    c.0.push((a, b, cc, g.constant(r)));
                }
            }
        }
    }
    let kind = if constant {
        FrameKind::Identity
    } else if affine {
        FrameKind::AffineAction
    } else {
        FrameKind::LinearAction
    };
    Ok((kind, c))
}

/// The symbols an expression reads.
fn symbols(g: &Graph, e: Id) -> Vec<u32> {
    g.symbols_read(e)
        .into_iter()
        .filter_map(|s| symbol_number(g, s))
        .collect()
}

/// `[A, B] = AB − BA` of sparse matrices given by their non-zero entries.
fn commutator(a: &[((usize, usize), f64)], b: &[((usize, usize), f64)]) -> BTreeMap<(usize, usize), f64> {
    let rows = |m: &[((usize, usize), f64)]| {
        let mut r: HashMap<usize, Vec<(usize, f64)>> = HashMap::new();
        for &((i, j), x) in m {
            r.entry(i).or_default().push((j, x));
        }
        r
    };
    let (ra, rb) = (rows(a), rows(b));
    let mut out = BTreeMap::new();
    for (first, second, sign) in [(a, &rb, 1.0), (b, &ra, -1.0)] {
        for &((i, k), x) in first {
            for &(j, y) in second.get(&k).map_or(&[][..], |l| &l[..]) {
                *out.entry((i, j)).or_insert(0.0) += sign * x * y;
            }
        }
    }
    out
}

/// A dense LU with partial pivoting, for solving the normal equations of
/// many brackets against one Gram matrix.
/// Disjoint sets of `0..n` (union–find with path halving, each set's root
/// its smallest member): the blocks of a frame, and of its Gram matrix.
struct Sets(Vec<usize>);

impl Sets {
    fn new(n: usize) -> Sets {
        Sets((0..n).collect())
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    fn union(&mut self, x: usize, y: usize) {
        let (rx, ry) = (self.find(x), self.find(y));
        if rx != ry {
            self.0[rx.max(ry)] = rx.min(ry);
        }
    }
}

/// The Gram matrix `G_ij = Σ_pos Â_i[pos] Â_j[pos]` of the frame's
/// matrices by its diagonal blocks (the components of "has an entry where
/// the other has one"), each factored.
struct GramBlocks {
    /// per block: its matrices, in order, and its factorization
    blocks: Vec<(Vec<usize>, DenseLu)>,
}

impl GramBlocks {
    /// The blocks of the matrices whose entries `at` lists by position:
    /// `None` where one is singular (the matrices are dependent).
    fn factor(m: usize, at: &BTreeMap<(usize, usize), Vec<(usize, f64)>>) -> Option<GramBlocks> {
        let mut sets = Sets::new(m);
        for list in at.values() {
            for w in list.windows(2) {
                sets.union(w[0].0, w[1].0);
            }
        }
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for a in 0..m {
            members.entry(sets.find(a)).or_default().push(a);
        }
        let mut local = vec![0usize; m];
        let mut of = vec![0usize; m];
        let groups: Vec<Vec<usize>> = members.into_values().collect();
        for (k, group) in groups.iter().enumerate() {
            for (i, &a) in group.iter().enumerate() {
                local[a] = i;
                of[a] = k;
            }
        }
        let mut grams: Vec<Vec<Vec<f64>>> = groups.iter().map(|g| vec![vec![0.0; g.len()]; g.len()]).collect();
        for list in at.values() {
            for &(i, x) in list {
                for &(j, y) in list {
                    grams[of[i]][local[i]][local[j]] += x * y;
                }
            }
        }
        let blocks = groups
            .into_iter()
            .zip(grams)
            .map(|(group, gm)| DenseLu::factor(gm).map(|lu| (group, lu)))
            .collect::<Option<Vec<_>>>()?;
        Some(GramBlocks { blocks })
    }

    /// `G⁻¹ b`, block by block (a block where `b` is zero gives zeros).
    fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut x = vec![0.0; b.len()];
        for (group, lu) in &self.blocks {
            let part: Vec<f64> = group.iter().map(|&a| b[a]).collect();
            if part.iter().all(|&v| v == 0.0) {
                continue;
            }
            for (&a, v) in group.iter().zip(lu.solve(part)) {
                x[a] = v;
            }
        }
        x
    }
}

struct DenseLu {
    a: Vec<Vec<f64>>,
    perm: Vec<usize>,
}

impl DenseLu {
    /// `None` where a pivot is below `1e-12`: the matrices are dependent.
    fn factor(mut a: Vec<Vec<f64>>) -> Option<Self> {
        let n = a.len();
        let mut perm = Vec::with_capacity(n);
        for col in 0..n {
            let p = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
            if a[p][col].abs() < 1e-12 {
                return None;
            }
            a.swap(col, p);
            perm.push(p);
            for r in col + 1..n {
                let f = a[r][col] / a[col][col];
                a[r][col] = f;
                if f != 0.0 {
                    for k in col + 1..n {
                        a[r][k] -= f * a[col][k];
                    }
                }
            }
        }
        Some(Self { a, perm })
    }

    fn solve(&self, mut b: Vec<f64>) -> Vec<f64> {
        let n = b.len();
        for col in 0..n {
            b.swap(col, self.perm[col]);
            for r in col + 1..n {
                b[r] -= self.a[r][col] * b[col];
            }
        }
        let mut x = vec![0.0; n];
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|k| self.a[i][k] * x[k]).sum();
            x[i] = (b[i] - s) / self.a[i][i];
        }
        x
    }
}

/// Whether a square `Ψ` is numerically singular at every sample point (its
/// fields pointwise dependent, as `Γ' = Γ × Ω`): the cofactor inverse would
/// divide by a determinant that is zero, or round-off, everywhere. A frame
/// that is not finite at the samples is left to the symbolic test.
fn singular_everywhere(g: &Graph, psi: &[Vec<Id>]) -> bool {
    let n = psi.len();
    (0..3).all(|k| {
        let a: Vec<Vec<f64>> = psi
            .iter()
            .map(|row| row.iter().map(|&e| g.eval(e, &|s| sample(k, s as usize))).collect())
            .collect();
        if a.iter().flatten().any(|x| !x.is_finite()) {
            return false;
        }
        // |det| against the product of the column norms (Hadamard's bound).
        let scale: f64 = (0..n)
            .map(|j| (0..n).map(|i| a[i][j] * a[i][j]).sum::<f64>().sqrt())
            .product();
        scale == 0.0 || det_dense(a).abs() <= 1e-12 * scale
    })
}

/// Determinant by Gaussian elimination with partial pivoting.
fn det_dense(mut a: Vec<Vec<f64>>) -> f64 {
    let n = a.len();
    let mut det = 1.0;
    for col in 0..n {
        let Some(p) = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs())) else {
            return 0.0;
        };
        if a[p][col] == 0.0 {
            return 0.0;
        }
        if p != col {
            a.swap(col, p);
            det = -det;
        }
        det *= a[col][col];
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            for k in col..n {
                a[r][k] -= f * a[col][k];
            }
        }
    }
    det
}

/// The blocks of a frame: a velocity joins the coordinates it moves and the
/// coordinates its coefficients depend on, transitively. Fields of different
/// blocks then act on disjoint coordinates without seeing each other's, so
/// their brackets vanish. Blocks are ordered by their first coordinate
/// (velocities that move nothing come last).
fn split(g: &Graph, psi: &[Vec<Id>], q: &[Id]) -> Vec<Block> {
    let n = q.len();
    let m = psi.first().map_or(0, Vec::len);
    let mut parent = Sets::new(n + m);
    for (i, row) in psi.iter().enumerate() {
        for (a, &e) in row.iter().enumerate() {
            if g.is_const(e, 0.0) {
                continue;
            }
            parent.union(i, n + a);
            for (j, &qj) in q.iter().enumerate() {
                if g.depends_on(e, &[qj]) {
                    parent.union(j, n + a);
                }
            }
        }
    }
    let mut blocks: Vec<(usize, Block)> = Vec::new();
    for x in 0..n + m {
        let r = parent.find(x);
        let k = match blocks.iter().position(|(root, _)| *root == r) {
            Some(k) => k,
            None => {
                blocks.push((
                    r,
                    Block {
                        coordinates: Vec::new(),
                        velocities: Vec::new(),
                        kind: FrameKind::Identity,
                    },
                ));
                blocks.len() - 1
            }
        };
        if x < n {
            blocks[k].1.coordinates.push(x);
        } else {
            blocks[k].1.velocities.push(x - n);
        }
    }
    blocks.into_iter().map(|(_, b)| b).collect()
}

/// `c(q) = Ψ(q)⁻¹ [u_a, u_b](q)` for a square frame.
fn invertible(g: &mut Graph, psi: &[Vec<Id>], q: &[Id]) -> Result<Vec<Vec<Vec<Id>>>, String> {
    let n = q.len();
    let cols: Vec<Vec<Id>> = (0..n).map(|a| (0..n).map(|i| psi[i][a]).collect()).collect();
    let dcols: Vec<Vec<Vec<Id>>> = cols.iter().map(|u| jacobian(g, u, q)).collect();
    let mut pairs = Vec::new();
    let mut rhs: Vec<Vec<Id>> = vec![Vec::new(); n];
    for a in 0..n {
        for b in 0..n {
            // [u_a, u_b] = Du_b · u_a − Du_a · u_b
            for (i, r) in rhs.iter_mut().enumerate() {
                let mut t = Vec::new();
                for j in 0..n {
                    let x = g.mul2(dcols[b][i][j], cols[a][j]);
                    let y = g.mul2(dcols[a][i][j], cols[b][j]);
                    t.push(g.sub(x, y));
                }
                r.push(g.add(&t));
            }
            pairs.push((a, b));
        }
    }
    let sol = solve_frame(g, psi, &rhs).ok_or_else(|| {
        "it is square but its determinant is identically zero, so it is not an invertible frame".to_string()
    })?;
    let zero = g.constant(0.0);
    let mut c = vec![vec![vec![zero; n]; n]; n];
    for (k, &(a, b)) in pairs.iter().enumerate() {
        for (cc, row) in sol.iter().enumerate() {
            c[cc][a][b] = row[k];
        }
    }
    Ok(c)
}

/// Frames up to this size are inverted by cofactors (`n² 2ⁿ` nodes at most);
/// larger ones by symbolic elimination, whose pivots may vanish inside the
/// frame's domain.
const COFACTOR_LIMIT: usize = 10;

/// `Ψ⁻¹ b` for a square frame matrix, as `adj(Ψ) b / det Ψ`. Symbolic
/// elimination has to fix its pivots at compile time, in declaration order,
/// and a rotation has no entry that is non-zero everywhere: the sleigh's
/// frame with `velocities { om, u, w }` pivoted on `sin(th)` and divided by
/// zero at `th = 0`. The cofactor form divides by `det Ψ` only, which
/// vanishes exactly where the frame stops being a frame, whatever the order.
/// `None` when `det Ψ` is structurally zero.
fn solve_frame(g: &mut Graph, psi: &[Vec<Id>], b: &[Vec<Id>]) -> Option<Vec<Vec<Id>>> {
    let n = psi.len();
    if n > COFACTOR_LIMIT {
        return linsolve::solve(g, psi, b);
    }
    let all = (1u32 << n) - 1;
    let mut memo = std::collections::HashMap::new();
    let det = minor(g, psi, all, all, &mut memo);
    if g.is_const(det, 0.0) {
        return None;
    }
    let inv_det = g.powf(det, -1.0);
    // cof[i][j] = (−1)^(i+j) · det of Ψ without row i and column j
    let cof: Vec<Vec<Id>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let d = minor(g, psi, all & !(1 << i), all & !(1 << j), &mut memo);
                    if (i + j) % 2 == 0 {
                        d
                    } else {
                        g.neg(d)
                    }
                })
                .collect()
        })
        .collect();
    let k = b.first().map_or(0, Vec::len);
    Some(
        (0..n)
            .map(|c| {
                (0..k)
                    .map(|col| {
                        let t: Vec<Id> = (0..n).map(|i| g.mul2(cof[i][c], b[i][col])).collect();
                        let s = g.add(&t);
                        // A bracket that is ±u_c gives a numerator that is
                        // ±det Ψ term by term (the graph distributes the sign):
                        // a number, not a ratio that rounds.
                        if s == det {
                            g.constant(1.0)
                        } else if g.neg(s) == det {
                            g.constant(-1.0)
                        } else {
                            g.mul2(s, inv_det)
                        }
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Determinant of the submatrix of `a` on the rows and columns whose bits are
/// set (equally many), by expansion along its first row; minors are shared
/// through `memo`.
fn minor(
    g: &mut Graph,
    a: &[Vec<Id>],
    rows: u32,
    cols: u32,
    memo: &mut std::collections::HashMap<(u32, u32), Id>,
) -> Id {
    if rows == 0 {
        return g.constant(1.0);
    }
    if let Some(&d) = memo.get(&(rows, cols)) {
        return d;
    }
    let r = rows.trailing_zeros() as usize;
    let mut terms = Vec::new();
    let mut sign = 1.0;
    for j in (0..a.len()).filter(|&j| cols & (1 << j) != 0) {
        if !g.is_const(a[r][j], 0.0) {
            let sub = minor(g, a, rows & !(1 << r), cols & !(1 << j), memo);
            let k = g.constant(sign);
            terms.push(g.mul(&[k, a[r][j], sub]));
        }
        sign = -sign;
    }
    let d = g.add(&terms);
    memo.insert((rows, cols), d);
    d
}
