//! What a state's health kernels say (see [`Kernels::metric_at`] and
//! [`Kernels::frame_check_at`]): whether the velocities are determined at a
//! state, how well (the constrained kinetic metric's condition number, which
//! a run watches for passes near a singularity of the coordinates), and, where
//! they are not, why, in the model's terms. Every back-end's kernels provide
//! the matrices; the judgement is made once, here.

use nalgebra::{DMatrix, Dim};

use crate::kernels::{Alloc, Kernels, NameList};

/// A condition number above this counts as singular.
const SINGULAR: f64 = 1e12;

/// The constrained kinetic metric `[[M, Aᵀ], [A, 0]]` at `(q, ξ)` with
/// parameter values `p`; `None` where the kernels provide none.
fn metric<S, Z, X>(sys: &S, p: &[f64], q: &[f64], v: &[f64]) -> Option<DMatrix<f64>>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    nalgebra::DefaultAllocator: Alloc<Z, X>,
{
    let n = sys.metric_size();
    if n == 0 {
        return None;
    }
    let mut k = vec![0.0; n * n];
    sys.metric_at(p, q, v, &mut k);
    Some(DMatrix::from_row_slice(n, n, &k))
}

/// Condition number of the constrained kinetic metric `[[M, Aᵀ], [A, 0]]`
/// at a physical state: infinite where it is singular (velocities the
/// Lagrangian does not determine, redundant constraints, a singularity of
/// the coordinates); 1 where the kernels provide no metric. Exact
/// (eigenvalues) up to size 12, estimated from the pivots of its LU factors
/// above.
pub fn metric_condition<S, Z, X>(sys: &S, q: &[f64], v: &[f64]) -> f64
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    nalgebra::DefaultAllocator: Alloc<Z, X>,
{
    condition_with(sys, &sys.parameters(), q, v)
}

fn condition_with<S, Z, X>(sys: &S, p: &[f64], q: &[f64], v: &[f64]) -> f64
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    nalgebra::DefaultAllocator: Alloc<Z, X>,
{
    let Some(k) = metric(sys, p, q, v) else {
        return 1.0;
    };
    if k.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    // Eigenvalues where that is cheap, the LU's pivots otherwise.
    let scales = if k.nrows() <= 12 {
        k.symmetric_eigenvalues()
    } else {
        k.lu().u().diagonal()
    };
    let (lo, hi) = scales.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(x.abs()), hi.max(x.abs()))
    });
    if lo == 0.0 || lo <= hi * 1e-15 {
        f64::INFINITY
    } else {
        hi / lo
    }
}

/// Why the constrained kinetic metric is singular at `(q, ξ)`, naming the
/// cause (redundant constraints, a parameter that zeroes a mass, a
/// singularity of the coordinates, velocities without kinetic energy);
/// `None` where it is not (condition number below 1e12).
pub fn metric_diagnosis<S, Z, X>(sys: &S, q: &[f64], v: &[f64]) -> Option<String>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    nalgebra::DefaultAllocator: Alloc<Z, X>,
{
    if metric_condition(sys, q, v) <= SINGULAR {
        return None;
    }
    let params = sys.parameters();
    let k = metric(sys, &params, q, v)?;
    let n = k.nrows();
    let m = v.len().min(n);
    // Constraints that repeat one another: the rows of A are dependent.
    if n > m {
        let a = k.view((m, 0), (n - m, m)).into_owned();
        let sv = a.singular_values();
        let top = sv.max();
        let rank = sv.iter().filter(|&&s| s > top * 1e-10).count();
        if rank < n - m {
            return Some(format!(
                "the {} velocity-level constraints have rank {rank}: some repeat or combine others; state each once",
                n - m
            ));
        }
    }
    // A parameter that zeroes a mass or a length.
    let zero: Vec<usize> = (0..params.len()).filter(|&i| params[i] == 0.0).collect();
    if !zero.is_empty() {
        let mut p = params.clone();
        for &i in &zero {
            p[i] = 1.0;
        }
        if condition_with(sys, &p, q, v) <= SINGULAR {
            let all = sys.names(NameList::Parameters);
            let names: Vec<&str> = zero.iter().map(|&i| all[i]).collect();
            return Some(format!(
                "parameter(s) {} = 0 remove the kinetic energy of some motion; give them non-zero values",
                names.join(", ")
            ));
        }
    }
    // A singularity of the coordinates: nearby configurations are regular.
    let nearby: Vec<f64> = q
        .iter()
        .enumerate()
        .map(|(i, x)| x + 1e-3 * (1.0 + x.abs()) * if i % 2 == 0 { 1.0 } else { -0.7 })
        .collect();
    if metric_condition(sys, &nearby, v) <= SINGULAR {
        return Some(
            "the configuration is a singular point of the coordinates (such as the pole of spherical angles), where they do not determine the velocities; start away from it, or use coordinates without it (a frame or directors)"
                .to_string(),
        );
    }
    // Otherwise velocities without kinetic energy: zero rows of M.
    let velocities = sys.names(NameList::Velocities);
    let zero_rows: Vec<usize> = (0..m).filter(|&a| (0..m).all(|b| k[(a, b)] == 0.0)).collect();
    if zero_rows.is_empty() {
        return Some(
            "the Lagrangian's velocity terms do not determine every velocity the constraints allow".to_string(),
        );
    }
    // A row that is zero only at these velocities belongs to a kinetic term
    // that is there but not quadratic (L = q'^4/4 at q' = 0): its Hessian
    // vanishes at this state, which is not the same as its absence.
    let moved: Vec<f64> = v
        .iter()
        .enumerate()
        .map(|(i, x)| x + 0.1 * (1.0 + x.abs()) * (1.0 + 0.3 * i as f64))
        .collect();
    let elsewhere = metric(sys, &params, q, &moved);
    let present_elsewhere = |a: usize| elsewhere.as_ref().is_some_and(|k2| (0..m).any(|b| k2[(a, b)] != 0.0));
    let (vanishing, absent): (Vec<usize>, Vec<usize>) = zero_rows.into_iter().partition(|&a| present_elsewhere(a));
    let list = |ix: &[usize]| ix.iter().map(|&a| velocities[a]).collect::<Vec<_>>().join(", ");
    Some(if absent.is_empty() {
        let at: Vec<String> = vanishing
            .iter()
            .map(|&a| format!("{} = {}", velocities[a], v[a]))
            .collect();
        format!(
            "the Lagrangian's kinetic term in {} is not quadratic, and its second derivative in {} vanishes at this state ({}), though not at other velocities; start where it does not vanish, or use a kinetic energy quadratic in the velocities",
            list(&vanishing),
            if vanishing.len() == 1 { "that velocity" } else { "those velocities" },
            at.join(", ")
        )
    } else {
        format!(
            "the Lagrangian has no kinetic term in {}: a velocity it does not contain is not determined (constrain it to zero, or add its kinetic energy)",
            list(&absent)
        )
    })
}

/// Why the frame cannot carry the motion at `(q, ξ)`: some velocity the
/// constraints allow moves nothing, not only here but at nearby generic
/// configurations too (e.g. `gamma' = 0 * xi`); `None` where it is fine,
/// where the model is in generalized coordinates, or where the kernels
/// provide no frame check.
///
/// Fields that are dependent only pointwise are no obstacle: in
/// `Gamma' = cross(Gamma, Omega)` the spin about `Γ` moves nothing at `Γ`
/// but does elsewhere, and the Lagrangian determines it; whether it does is
/// the kinetic metric's test ([`metric_diagnosis`]). So `[Ψ; A]` is judged
/// with `Ψ` taken at `q` and at two configurations near it, the constraint
/// rows at `q`.
pub fn frame_diagnosis<S, Z, X>(sys: &S, q: &[f64], v: &[f64]) -> Option<String>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    nalgebra::DefaultAllocator: Alloc<Z, X>,
{
    let (rows, cols) = sys.frame_check_size()?;
    let n = q.len();
    let at = |q: &[f64]| {
        let mut f = vec![0.0; rows * cols];
        sys.frame_check_at(q, v, &mut f);
        f
    };
    let f = at(q);
    if f.iter().any(|x| !x.is_finite()) {
        return Some("the frame `q' = Ψ(q) ξ` is not finite here".to_string());
    }
    let mut stacked = f.clone();
    for pattern in [1.7, 2.9] {
        let near: Vec<f64> = q
            .iter()
            .enumerate()
            .map(|(i, x)| x + 0.1 * (1.0 + x.abs()) * (pattern * (i as f64 + 1.0)).sin())
            .collect();
        let g = at(&near);
        if g[..n * cols].iter().all(|x| x.is_finite()) {
            stacked.extend_from_slice(&g[..n * cols]);
        }
    }
    let m = DMatrix::from_row_slice(stacked.len() / cols, cols, &stacked);
    let sv = m.singular_values();
    let top = sv.max();
    let rank = sv.iter().filter(|&&s| s > top * 1e-10).count();
    (rank < cols).then(|| {
        format!(
            "the frame `q' = Ψ(q) ξ` with the constraints moves only {rank} of the {cols} velocity directions, here and at configurations near it: some velocity the constraints allow never moves the configuration (check the `frame` block)"
        )
    })
}
