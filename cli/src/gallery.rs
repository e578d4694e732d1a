//! The gallery (`models/gallery/`): classic models written as textbooks
//! write them, each with a physics check against a result hamel did not
//! compute — a closed form, a conservation law, or a classical RK4
//! integration (small step) of equations derived by hand here — under every
//! scheme that applies to it and on either run-time back-end.
//!
//! One list, [`checks`], drives the report's "Gallery" section (model,
//! scheme, check, figure) and the test that holds every figure to its bound
//! (`cli/tests/gallery.rs`), so the published figures cannot drift from what
//! is tested.

use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;
use hamel_load::{Run, RunOptions};
use hamel_runtime::control::dlqr;
use hamel_runtime::nalgebra::{DMatrix, DVector};
use hamel_runtime::DynStepper;

use crate::doc::{Block, Doc};
use crate::{Backend, Error, System};

/// The gallery's model files, as shipped (built into the binary).
pub const MODELS: &[(&str, &str)] = &[
    (
        "anisotropic_oscillator",
        include_str!("../../models/gallery/anisotropic_oscillator.hamel"),
    ),
    (
        "atwood_machine",
        include_str!("../../models/gallery/atwood_machine.hamel"),
    ),
    (
        "bead_on_torus",
        include_str!("../../models/gallery/bead_on_torus.hamel"),
    ),
    (
        "cart_inverted_spherical_pendulum",
        include_str!("../../models/gallery/cart_inverted_spherical_pendulum.hamel"),
    ),
    ("cart_pole", include_str!("../../models/gallery/cart_pole.hamel")),
    (
        "cart_spherical_pendulum",
        include_str!("../../models/gallery/cart_spherical_pendulum.hamel"),
    ),
    (
        "chaplygin_sleigh_bloch",
        include_str!("../../models/gallery/chaplygin_sleigh_bloch.hamel"),
    ),
    (
        "charged_particle",
        include_str!("../../models/gallery/charged_particle.hamel"),
    ),
    (
        "double_pendulum",
        include_str!("../../models/gallery/double_pendulum.hamel"),
    ),
    (
        "elastic_pendulum",
        include_str!("../../models/gallery/elastic_pendulum.hamel"),
    ),
    (
        "foucault_linear",
        include_str!("../../models/gallery/foucault_linear.hamel"),
    ),
    (
        "foucault_pendulum",
        include_str!("../../models/gallery/foucault_pendulum.hamel"),
    ),
    (
        "free_particle_spherical",
        include_str!("../../models/gallery/free_particle_spherical.hamel"),
    ),
    (
        "free_rigid_body",
        include_str!("../../models/gallery/free_rigid_body.hamel"),
    ),
    (
        "harmonic_chain",
        include_str!("../../models/gallery/harmonic_chain.hamel"),
    ),
    (
        "kapitza_pendulum",
        include_str!("../../models/gallery/kapitza_pendulum.hamel"),
    ),
    ("heavy_top", include_str!("../../models/gallery/heavy_top.hamel")),
    ("kepler", include_str!("../../models/gallery/kepler.hamel")),
    ("kepler_polar", include_str!("../../models/gallery/kepler_polar.hamel")),
    (
        "knife_edge_incline",
        include_str!("../../models/gallery/knife_edge_incline.hamel"),
    ),
    (
        "lagrange_top_matrix",
        include_str!("../../models/gallery/lagrange_top_matrix.hamel"),
    ),
    (
        "particle_on_cone",
        include_str!("../../models/gallery/particle_on_cone.hamel"),
    ),
    (
        "particle_on_paraboloid",
        include_str!("../../models/gallery/particle_on_paraboloid.hamel"),
    ),
    (
        "particle_on_sphere",
        include_str!("../../models/gallery/particle_on_sphere.hamel"),
    ),
    ("planar_body", include_str!("../../models/gallery/planar_body.hamel")),
    (
        "planar_pendulum",
        include_str!("../../models/gallery/planar_pendulum.hamel"),
    ),
    ("projectile", include_str!("../../models/gallery/projectile.hamel")),
    ("rolling_disk", include_str!("../../models/gallery/rolling_disk.hamel")),
    (
        "rotating_hoop",
        include_str!("../../models/gallery/rotating_hoop.hamel"),
    ),
    (
        "rotating_wire",
        include_str!("../../models/gallery/rotating_wire.hamel"),
    ),
    (
        "satellite_torque",
        include_str!("../../models/gallery/satellite_torque.hamel"),
    ),
    ("suslov", include_str!("../../models/gallery/suslov.hamel")),
    (
        "three_body_figure_eight",
        include_str!("../../models/gallery/three_body_figure_eight.hamel"),
    ),
    (
        "two_masses_spring",
        include_str!("../../models/gallery/two_masses_spring.hamel"),
    ),
];

/// Every scheme.
const ALL: &[&str] = &[
    "hamel_averaged",
    "hamel_midpoint",
    "stormer_verlet",
    "rattle",
    "energy_momentum",
];
/// The schemes in generalized coordinates with any regular Lagrangian (no
/// frame): a mass matrix that depends on the coordinates, or terms linear in
/// the velocities (RATTLE in its general form, HLW VII (1.26)).
const GENERAL: &[&str] = &["hamel_averaged", "hamel_midpoint", "stormer_verlet", "rattle"];
/// The Hamel schemes (frames, velocity constraints).
const HAMEL: &[&str] = &["hamel_averaged", "hamel_midpoint"];
/// The schemes that take holonomic constraints.
const HOLONOMIC: &[&str] = &["stormer_verlet", "rattle", "energy_momentum"];

/// What a check measured: the figure held to the check's bound and, for
/// convergence checks, the observed order between `h` and `h/2`.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// the measured error (at the finer step for convergence checks)
    pub value: f64,
    /// `log₂(e(h)/e(h/2))`, for convergence checks
    pub order: Option<f64>,
}

/// One physics check of one gallery model under a list of schemes. Every
/// run a check makes must also pass the run's health verdict (no warning),
/// except where the check is about the warning itself.
pub struct Check {
    /// the model's name (`models/gallery/{model}.hamel`)
    pub model: &'static str,
    /// the schemes the check runs under: every scheme that applies
    pub schemes: &'static [&'static str],
    /// what is compared with what, one line
    pub what: &'static str,
    /// the largest figure accepted
    pub bound: f64,
    /// runs the check on a compiled system
    pub run: fn(&Ctx) -> Result<Figure, String>,
}

/// What a check gets: the model under one scheme and back-end.
pub struct Ctx {
    model: Model,
    scheme: Scheme,
    backend: Backend,
    sys: System,
}

impl Ctx {
    /// The scheme's short name.
    pub fn scheme(&self) -> &'static str {
        self.scheme.name()
    }
}

/// One row of the gallery table: a check under one scheme.
#[derive(Clone, Debug)]
pub struct Row {
    /// model name
    pub model: &'static str,
    /// scheme name
    pub scheme: &'static str,
    /// what the check compares
    pub what: &'static str,
    /// the bound the figure is held to
    pub bound: f64,
    /// the figure
    pub figure: Figure,
}

impl Row {
    /// Whether the figure is within its bound and a convergence check
    /// observed order 2 (± 0.1).
    pub fn passes(&self) -> bool {
        self.figure.value.is_finite()
            && self.figure.value <= self.bound
            && self.figure.order.is_none_or(|p| (p - 2.0).abs() <= 0.1)
    }
}

/// The source of gallery model `name`.
pub fn source(name: &str) -> Option<&'static str> {
    MODELS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Runs `check` under `scheme` on `backend`.
pub fn run_check(check: &Check, scheme: &'static str, backend: Backend) -> Result<Row, Error> {
    let src = source(check.model).ok_or_else(|| Error::Usage(format!("no gallery model `{}`", check.model)))?;
    let model = hamel_load::load_source(&format!("models/gallery/{}.hamel", check.model), src, &[])?;
    let scheme_v = crate::parse_scheme(scheme, None)?;
    let sys = crate::compile(&model, scheme_v, backend)?;
    let ctx = Ctx {
        model,
        scheme: scheme_v,
        backend,
        sys,
    };
    let figure = (check.run)(&ctx)
        .map_err(|e| Error::Untrustworthy(format!("gallery check of {} under {scheme}: {e}", check.model)))?;
    Ok(Row {
        model: check.model,
        scheme,
        what: check.what,
        bound: check.bound,
        figure,
    })
}

/// Every gallery check under every scheme it lists, on `backend`, in order.
pub fn run_all(backend: Backend, mut progress: impl FnMut(&Row)) -> Result<Vec<Row>, Error> {
    let mut rows = vec![];
    for c in checks() {
        for &s in c.schemes {
            let row = run_check(&c, s, backend)?;
            progress(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The report's section 7: every gallery check under every scheme it lists,
/// with its measured figure, as one table.
pub fn section(doc: &mut Doc, backend: Backend, say: &mut dyn FnMut(&str)) -> Result<(), Error> {
    say("7. gallery");
    doc.push(Block::Heading(
        2,
        "7. Gallery: textbook models, each checked under every scheme that applies".into(),
    ));
    let rows = run_all(backend, |r| {
        say(&format!("  {} {} {}", r.model, r.scheme, fmt_figure(&r.figure)))
    })?;
    let cases: std::collections::BTreeSet<(&str, &str)> = rows.iter().map(|r| (r.model, r.scheme)).collect();
    let models: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.model).collect();
    let passed = rows.iter().filter(|r| r.passes()).count();
    doc.push(Block::Para(format!(
        "`models/gallery/`: {} models written as the textbooks write them, {} (model, scheme) cases, {} checks ({passed} within their bounds; back-end: {backend}). Each check compares a run with a result hamel did not compute: a closed form, a conservation law, or an RK4 integration (small step) of equations derived by hand in `cli/src/gallery.rs`. Convergence checks give the error at the finer of two steps `h`, `h/2` and the observed order; `cargo test -p hamel-cli --test gallery` holds every figure to its bound, and the order to 2 ± 0.1, on both back-ends.",
        models.len(),
        cases.len(),
        rows.len()
    )));
    doc.push(Block::Table(
        ["model", "scheme", "check", "figure", "order", "bound"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows.iter()
            .map(|r| {
                vec![
                    format!("`{}`", r.model),
                    r.scheme.to_string(),
                    r.what.to_string(),
                    format!("{:.2e}", r.figure.value),
                    r.figure.order.map_or("—".into(), |p| format!("{p:.3}")),
                    format!("{:.0e}", r.bound),
                ]
            })
            .collect(),
    ));
    Ok(())
}

fn fmt_figure(f: &Figure) -> String {
    match f.order {
        Some(p) => format!("{:.2e} (order {p:.3})", f.value),
        None => format!("{:.2e}", f.value),
    }
}

// ---------------------------------------------------------------------------
// Helpers: runs, references.

/// The run of `steps` steps of size `h` from the named initial state,
/// recording the first and the last state; an error when the run's health
/// verdict flags it (every gallery run resolves its motion, so none may be,
/// except index-reduced Störmer–Verlet for its named drift off holonomic
/// constraints).
fn simulate(ctx: &Ctx, init: &str, h: f64, steps: u64) -> Result<Run, String> {
    let r = simulate_any(ctx, init, h, steps)?;
    let w = r.warnings();
    // Index-reduced Störmer–Verlet drifts off holonomic constraints by
    // design; its runs are flagged with the drift named, and nothing else.
    let drift_only = ctx.scheme() == "stormer_verlet"
        && !ctx.model.holonomic.is_empty()
        && w.iter().all(|w| w.contains("index-reduced"));
    if w.is_empty() || drift_only {
        Ok(r)
    } else {
        Err(format!("the run of {steps} steps of {h} is flagged: {}", w.join("; ")))
    }
}

/// [`simulate`] without the health verdict.
fn simulate_any(ctx: &Ctx, init: &str, h: f64, steps: u64) -> Result<Run, String> {
    let opt = RunOptions {
        h,
        steps,
        compensated: false,
        record_every: steps.max(1),
        inputs: None,
        newton: Default::default(),
    };
    let state = ctx.sys.initial(init).map_err(|e| e.to_string())?;
    hamel_load::run(&ctx.sys, state, None, &opt).map_err(|e| e.to_string())
}

fn last(r: &Run) -> (&[f64], &[f64]) {
    (r.q.last().map_or(&[][..], |q| q), r.v.last().map_or(&[][..], |v| v))
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// The error `err(final q, final v, t reached)` at steps `h` and `h/2` over
/// `[0, t]` (steps rounded), as a convergence figure.
fn converges(
    ctx: &Ctx,
    init: &str,
    t: f64,
    h: f64,
    err: impl Fn(&[f64], &[f64], f64) -> f64,
) -> Result<Figure, String> {
    let mut e = [0.0; 2];
    for (k, hk) in [h, h / 2.0].into_iter().enumerate() {
        let steps = (t / hk).round() as u64;
        let r = simulate(ctx, init, hk, steps)?;
        let (q, v) = last(&r);
        e[k] = err(q, v, steps as f64 * hk);
    }
    Ok(Figure {
        value: e[1],
        order: Some((e[0] / e[1]).log2()),
    })
}

/// The largest deviation of monitored quantity `name` over a run (absolute,
/// or relative for the energy).
fn drift(r: &Run, name: &str) -> Result<f64, String> {
    let q = r.monitor.get(name).ok_or_else(|| format!("no quantity `{name}`"))?;
    Ok(if name == "energy" {
        q.max_rel_error
    } else {
        q.max_abs_error
    })
}

/// A plain figure (no order).
fn value(v: f64) -> Result<Figure, String> {
    Ok(Figure { value: v, order: None })
}

/// Classical RK4 for `y' = f(t, y)` over `[0, t]` in `n` steps.
fn rk4(f: impl Fn(f64, &[f64]) -> Vec<f64>, y0: &[f64], t: f64, n: usize) -> Vec<f64> {
    let h = t / n as f64;
    let mut y = y0.to_vec();
    let axpy = |y: &[f64], k: &[f64], s: f64| -> Vec<f64> { y.iter().zip(k).map(|(a, b)| a + s * b).collect() };
    for i in 0..n {
        let s = i as f64 * h;
        let k1 = f(s, &y);
        let k2 = f(s + h / 2.0, &axpy(&y, &k1, h / 2.0));
        let k3 = f(s + h / 2.0, &axpy(&y, &k2, h / 2.0));
        let k4 = f(s + h, &axpy(&y, &k3, h));
        for j in 0..y.len() {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    y
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn p(ctx: &Ctx, name: &str) -> f64 {
    ctx.sys.parameter(name).unwrap_or(f64::NAN)
}

/// Euler–Poisson with a body torque: `IΩ' = IΩ × Ω + m g l Γ × e₃ + τ(t)`,
/// `Γ' = Γ × Ω` (inertia `i` possibly with products `I13`, `I23`); state `(Γ, Ω)`.
fn euler_poisson(inertia: [f64; 3], mgl: f64, torque: impl Fn(f64) -> [f64; 3]) -> impl Fn(f64, &[f64]) -> Vec<f64> {
    move |t, y| {
        let gamma = [y[0], y[1], y[2]];
        let om = [y[3], y[4], y[5]];
        let iom = [inertia[0] * om[0], inertia[1] * om[1], inertia[2] * om[2]];
        let gyro = cross(iom, om);
        let grav = cross(gamma, [0.0, 0.0, 1.0]);
        let tau = torque(t);
        let mut d = cross(gamma, om).to_vec();
        d.extend((0..3).map(|i| (gyro[i] + mgl * grav[i] + tau[i]) / inertia[i]));
        d
    }
}

/// Complete elliptic integral of the first kind `K(k)` by the
/// arithmetic–geometric mean: `K = π / (2 AGM(1, √(1 − k²)))`.
fn elliptic_k(k: f64) -> f64 {
    let (mut a, mut b) = (1.0f64, (1.0 - k * k).sqrt());
    for _ in 0..40 {
        let (an, bn) = ((a + b) / 2.0, (a * b).sqrt());
        a = an;
        b = bn;
    }
    std::f64::consts::PI / (2.0 * a)
}

/// An orthonormal basis of the controllable subspace of `(a, b)`: the
/// Krylov space `span(B, AB, A²B, …)`, orthogonalized as it grows. It is
/// invariant under `A`; the directions it leaves out (the redundant ones of
/// a scheme's state, such as `‖e‖`, with eigenvalues 1 or 0) no input reaches.
fn controllable_basis(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let n = a.nrows();
    let mut basis: Vec<DVector<f64>> = vec![];
    let mut frontier: Vec<DVector<f64>> = b.column_iter().map(|c| c.into_owned()).collect();
    let scale = a.norm().max(1.0) * b.norm().max(1.0);
    while !frontier.is_empty() && basis.len() < n {
        let mut next = vec![];
        for mut v in frontier {
            let norm0 = v.norm();
            for _ in 0..2 {
                for u in &basis {
                    let c = u.dot(&v);
                    v -= u * c;
                }
            }
            let nv = v.norm();
            if nv > 1e-9 * norm0.max(1e-300) && nv > 1e-14 * scale {
                let u = v / nv;
                next.push(a * &u);
                basis.push(u);
            }
        }
        frontier = next;
    }
    DMatrix::from_columns(&basis)
}

/// LQR designed on the scheme's own linearization `(A, B)` at the state
/// `upright` (in the controllable subspace, `Q = I`, `R = I`), closed loop
/// from `tilted` until the slowest designed mode has decayed by 1e-4: the
/// largest distance of the run's `z_k − z*` from the designed linear closed
/// loop `(A − BK)^k (z_0 − z*)`, relative to the latter's largest size. The
/// run decays as designed when this is of the order of the initial tilt
/// (the nonlinear terms); an incomplete linearization shows as an O(1) gap.
fn lqr_decay(ctx: &Ctx, h: f64) -> Result<Figure, String> {
    let sys = hamel_load::compile_with_sensitivity(&ctx.model, ctx.scheme, ctx.backend).map_err(|e| e.to_string())?;
    let upright = sys.initial("upright").map_err(|e| e.to_string())?;
    let z_star = upright.z.clone();
    let mut lin = upright;
    let mut s = DynStepper::new(&sys, h).map_err(|e| e.to_string())?;
    let (a, b) = s.step_linearized(&mut lin, true).map_err(|e| e.to_string())?;
    let t = controllable_basis(&a, &b);
    let (a_r, b_r) = (t.transpose() * &a * &t, t.transpose() * &b);
    let nr = t.ncols();
    let lqr = dlqr(
        &a_r,
        &b_r,
        &DMatrix::identity(nr, nr),
        &DMatrix::identity(b.ncols(), b.ncols()),
        1e-13,
        100_000,
    )
    .map_err(|e| e.to_string())?;
    let k = &lqr.k * t.transpose();
    let phi = &a - &b * &k;
    let mut st = sys.initial("tilted").map_err(|e| e.to_string())?;
    let mut cl = DynStepper::new(&sys, h).map_err(|e| e.to_string())?;
    // Until the slowest mode has decayed by 1e-4.
    let steps = ((1e-4f64).ln() / lqr.spectral_radius.ln())
        .ceil()
        .clamp(10.0, 100_000.0) as usize;
    let mut linear = &st.z - &z_star;
    let (mut gap, mut size) = (0.0f64, 0.0f64);
    for _ in 0..steps {
        let d = &st.z - &z_star;
        gap = gap.max((&d - &linear).norm());
        size = size.max(linear.norm());
        let u = -(&k * &d);
        cl.step_with_inputs(&mut st, u.as_slice()).map_err(|e| e.to_string())?;
        linear = &phi * &linear;
    }
    let d = &st.z - &z_star;
    gap = gap.max((&d - &linear).norm());
    value(gap / size)
}

// ---------------------------------------------------------------------------
// The checks.

/// Every gallery check, in the order of the table.
pub fn checks() -> Vec<Check> {
    [
        central_forces(),
        pendulums(),
        rheonomic(),
        coupled(),
        constraint_surfaces(),
        rigid_bodies(),
        translating_bodies(),
        nonholonomic(),
        controlled(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Free particles and central forces: closed forms and the figure-eight orbit.
fn central_forces() -> Vec<Check> {
    vec![
        Check {
            model: "projectile",
            schemes: ALL,
            what: "parabola (closed form) at t = 2, h = 0.01: max |error| (every scheme exact)",
            bound: 1e-11,
            run: |c| {
                let r = simulate(c, "throw", 0.01, 200)?;
                let (q, v) = last(&r);
                let t = 2.0;
                value(max_diff(q, &[3.0 * t, 1.0 + 4.0 * t - 4.905 * t * t]).max(max_diff(v, &[3.0, 4.0 - 9.81 * t])))
            },
        },
        Check {
            model: "atwood_machine",
            schemes: ALL,
            what: "uniform acceleration g(m₁ − m₂)/(m₁ + m₂) (closed form) at t = 2, h = 0.01: max |error|",
            bound: 1e-11,
            run: |c| {
                let r = simulate(c, "moving", 0.01, 200)?;
                let (m1, m2, g) = (p(c, "m1"), p(c, "m2"), p(c, "g"));
                let a = g * (m1 - m2) / (m1 + m2);
                let (q, v) = last(&r);
                let t = 2.0;
                value(max_diff(q, &[1.0 - 0.5 * t + 0.5 * a * t * t]).max(max_diff(v, &[-0.5 + a * t])))
            },
        },
        Check {
            model: "anisotropic_oscillator",
            schemes: ALL,
            what: "x = cos t, y = sin(2t)/2 (closed form) at t = 3, h = 0.01: max |error|, order",
            bound: 1e-3,
            run: |c| {
                converges(c, "start", 3.0, 0.02, |q, _, t| {
                    max_diff(q, &[t.cos(), (2.0 * t).sin() / 2.0])
                })
            },
        },
        Check {
            model: "two_masses_spring",
            schemes: ALL,
            what: "centre of mass uniform, stretch at ω = √(k/μ) (closed form) at t = 5, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (m1, m2, k, l) = (p(c, "m1"), p(c, "m2"), p(c, "k"), p(c, "l"));
                converges(c, "stretched", 5.0, 0.01, move |q, _, t| {
                    let (x1, x2, v1, v2) = (0.0, 1.3, 0.2, -0.1);
                    let mass = m1 + m2;
                    let w = (k * mass / (m1 * m2)).sqrt();
                    let cm = (m1 * x1 + m2 * x2) / mass + (m1 * v1 + m2 * v2) / mass * t;
                    let s = l + (x2 - x1 - l) * (w * t).cos() + (v2 - v1) / w * (w * t).sin();
                    max_diff(q, &[cm - m2 / mass * s, cm + m1 / mass * s])
                })
            },
        },
        Check {
            model: "kepler",
            schemes: ALL,
            what: "back at perihelion (0.4, 0) after the period 2π (closed form), h = 0.001: max |error|, order",
            bound: 2e-3,
            run: |c| {
                converges(c, "perihelion", 2.0 * std::f64::consts::PI, 0.002, |q, _, t| {
                    max_diff(q, &[0.4, 2.0 * (t - 2.0 * std::f64::consts::PI)])
                })
            },
        },
        Check {
            model: "kepler_polar",
            schemes: GENERAL,
            what: "back at perihelion r = 0.4, θ = 2π after the period 2π (closed form), h = 0.001: max |error|, order",
            bound: 2e-3,
            run: |c| {
                converges(c, "perihelion", 2.0 * std::f64::consts::PI, 0.002, |q, _, t| {
                    let dt = t - 2.0 * std::f64::consts::PI;
                    max_diff(q, &[0.4, 2.0 * std::f64::consts::PI + 5.0 * dt])
                })
            },
        },
        Check {
            model: "kepler_polar",
            schemes: GENERAL,
            what: "drift of p_θ = m r² θ̇ (θ cyclic) over one period, h = 0.002: max |Δp_θ|",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "perihelion", 0.002, 3142)?;
                value(drift(&r, "p_th")?)
            },
        },
        Check {
            model: "free_particle_spherical",
            schemes: GENERAL,
            what: "straight line at constant speed (closed form, Cartesian) at t = 2, h = 0.005: max |error|, order",
            bound: 1e-4,
            run: |c| {
                converges(c, "moving", 2.0, 0.01, |q, _, t| {
                    let cart =
                        |r: f64, th: f64, ph: f64| [r * th.sin() * ph.cos(), r * th.sin() * ph.sin(), r * th.cos()];
                    let (r, th, ph, dr, dth, dph) = (1.0f64, 1.2f64, 0.3f64, 0.5, 0.4, 0.7);
                    let x0 = cart(r, th, ph);
                    // velocity: ∂x/∂(r, θ, φ) · (ṙ, θ̇, φ̇)
                    let v0 = [
                        dr * th.sin() * ph.cos() + r * dth * th.cos() * ph.cos() - r * dph * th.sin() * ph.sin(),
                        dr * th.sin() * ph.sin() + r * dth * th.cos() * ph.sin() + r * dph * th.sin() * ph.cos(),
                        dr * th.cos() - r * dth * th.sin(),
                    ];
                    let want: Vec<f64> = (0..3).map(|i| x0[i] + v0[i] * t).collect();
                    max_diff(&cart(q[0], q[1], q[2]), &want)
                })
            },
        },
        Check {
            model: "three_body_figure_eight",
            schemes: ALL,
            what:
                "back at the initial state after the period T = 6.32591398 (choreography), h = T/1000: max |Δq|, order",
            bound: 1e-3,
            run: |c| {
                let t = 6.325_913_98;
                let q0 = [0.97000436, -0.24308753, -0.97000436, 0.24308753, 0.0, 0.0];
                converges(c, "eight", t, t / 500.0, move |q, _, _| max_diff(q, &q0))
            },
        },
        Check {
            model: "three_body_figure_eight",
            schemes: &["hamel_midpoint", "stormer_verlet", "rattle"],
            what:
                "drift of the total momentum and angular momentum over one period, h = T/1000 (symplectic: round-off)",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "eight", 6.325_913_98 / 1000.0, 1000)?;
                value(drift(&r, "Px")?.max(drift(&r, "Py")?).max(drift(&r, "Lz")?))
            },
        },
    ]
}

/// Pendulums: planar, elastic, on a rotating hoop.
fn pendulums() -> Vec<Check> {
    vec![
        Check {
            model: "planar_pendulum",
            schemes: ALL,
            what: "through the bottom θ = 0 at T/4, T = 4√(l/g) K(sin(θ₀/2)) (elliptic integral by AGM), θ₀ = 2, h = T/800: |θ|, order",
            bound: 1e-3,
            run: |c| {
                // At the bottom the speed is largest, so the phase error
                // shows at O(h²); at a turning point (T) it is O(h⁴).
                let period = 4.0 * (p(c, "l") / p(c, "g")).sqrt() * elliptic_k(1f64.sin());
                converges(c, "released", period / 4.0, period / 400.0, |q, _, _| q[0].abs())
            },
        },
        Check {
            model: "elastic_pendulum",
            schemes: GENERAL,
            what: "RK4 of r̈ = rθ̇² − (k/m)(r − l₀) + g cos θ, θ̈ = −(2ṙθ̇ + g sin θ)/r at t = 3, h = 0.0025: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (m, k, l0, g) = (p(c, "m"), p(c, "k"), p(c, "l0"), p(c, "g"));
                let want = rk4(
                    |_, y| {
                        vec![
                            y[2],
                            y[3],
                            y[0] * y[3] * y[3] - k / m * (y[0] - l0) + g * y[1].cos(),
                            -(2.0 * y[2] * y[3] + g * y[1].sin()) / y[0],
                        ]
                    },
                    &[1.3, 0.4, 0.0, 0.5],
                    3.0,
                    30_000,
                );
                converges(c, "stretched", 3.0, 0.005, move |q, _, _| max_diff(q, &want[..2]))
            },
        },
        Check {
            model: "rotating_hoop",
            schemes: ALL,
            what: "RK4 of θ̈ = sin θ (ω² cos θ − g/R) at t = 3, h = 0.0025: |error|, order",
            bound: 1e-3,
            run: |c| {
                let (r, g, w) = (p(c, "R"), p(c, "g"), p(c, "omega"));
                let want = rk4(|_, y| vec![y[1], y[0].sin() * (w * w * y[0].cos() - g / r)], &[0.3, 0.0], 3.0, 30_000);
                converges(c, "near_bottom", 3.0, 0.005, move |q, _, _| (q[0] - want[0]).abs())
            },
        },
    ]
}

/// Rheonomic models: time in the Lagrangian or in a constraint.
fn rheonomic() -> Vec<Check> {
    vec![
        Check {
            model: "kapitza_pendulum",
            schemes: GENERAL,
            what: "RK4 of θ̈ = −(g − aω² cos ωt)/l sin θ at t = 1, h = 0.001: |error|, order",
            bound: 1e-4,
            run: |c| {
                let (l, g, a, w) = (p(c, "l"), p(c, "g"), p(c, "a"), p(c, "omega"));
                let want = rk4(
                    |t, y| vec![y[1], -(g - a * w * w * (w * t).cos()) / l * y[0].sin()],
                    &[2.9, 0.0],
                    1.0,
                    20_000,
                );
                converges(c, "near_top", 1.0, 0.002, move |q, _, _| (q[0] - want[0]).abs())
            },
        },
        Check {
            model: "rotating_wire",
            schemes: &["stormer_verlet", "rattle", "energy_momentum"],
            what: "(x, y) = r(t)(cos ωt, sin ωt), r = r₀ cosh ωt + (ṙ₀/ω) sinh ωt (closed form) at t = 1, h = 0.0025: max |error|, order",
            bound: 1e-4,
            run: |c| {
                let w = p(c, "omega");
                converges(c, "sliding_out", 1.0, 0.005, move |q, _, t| {
                    let r = 0.5 * (w * t).cosh() + 0.1 / w * (w * t).sinh();
                    max_diff(q, &[r * (w * t).cos(), r * (w * t).sin()])
                })
            },
        },
        Check {
            model: "rotating_wire",
            schemes: &["energy_momentum"],
            what: "energy balance E − Σ W (the wire's work λ ∂̄g/∂t), 400 steps of 0.005: max defect relative to the energy reached",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "sliding_out", 0.005, 400)?;
                let b = r.monitor.get("energy balance").ok_or("no energy balance")?;
                value(b.max_rel_error)
            },
        },
        Check {
            model: "foucault_linear",
            schemes: GENERAL,
            what: "x + iy = e^{−iΩt}(A e^{iω't} + B e^{−iω't}) (closed form) at t = 4, h = 0.0025: max |error|, order",
            bound: 1e-4,
            run: |c| {
                let (g, l, oz) = (p(c, "g"), p(c, "l"), p(c, "Oz"));
                converges(c, "released", 4.0, 0.005, move |q, _, t| {
                    let w = (g / l + oz * oz).sqrt();
                    let (a, b) = (0.1 * (w + oz) / (2.0 * w), 0.1 * (w - oz) / (2.0 * w));
                    // a e^{i(ω'−Ω)t} + b e^{−i(ω'+Ω)t}
                    let (p1, p2) = ((w - oz) * t, -(w + oz) * t);
                    let want = [a * p1.cos() + b * p2.cos(), a * p1.sin() + b * p2.sin()];
                    max_diff(q, &want)
                })
            },
        },
        Check {
            model: "foucault_linear",
            schemes: GENERAL,
            what: "drift of the canonical angular momentum m(xẏ − yẋ) + mΩ(x² + y²), 2000 steps of 0.005",
            bound: 1e-13,
            run: |c| {
                let r = simulate(c, "released", 0.005, 2000)?;
                value(drift(&r, "L")?)
            },
        },
        Check {
            model: "foucault_pendulum",
            schemes: &["rattle"],
            what: "RK4 of ẍ = −2Ω × ẋ − Ω × (Ω × x) − g ẑ − (λ/m) x, λ from (|x|²)'' = 0, at t = 4, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (g, w, lat) = (p(c, "g"), p(c, "W"), p(c, "lat"));
                let l = p(c, "l");
                let om = [w * lat.cos(), 0.0, w * lat.sin()];
                let want = rk4(
                    |_, y| {
                        let (x, v) = ([y[0], y[1], y[2]], [y[3], y[4], y[5]]);
                        let cor = cross(om, v);
                        let cen = cross(om, cross(om, x));
                        let a0: Vec<f64> = (0..3).map(|i| -2.0 * cor[i] - cen[i] - if i == 2 { g } else { 0.0 }).collect();
                        let xx = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
                        let lam = (x[0] * a0[0] + x[1] * a0[1] + x[2] * a0[2] + v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / xx;
                        let mut d = v.to_vec();
                        d.extend((0..3).map(|i| a0[i] - lam * x[i]));
                        d
                    },
                    &[l * 0.2f64.sin(), 0.0, -l * 0.2f64.cos(), 0.0, 0.0, 0.0],
                    4.0,
                    40_000,
                );
                converges(c, "released", 4.0, 0.01, move |q, _, _| max_diff(q, &want[..3]))
            },
        },
        Check {
            model: "foucault_pendulum",
            schemes: &["rattle"],
            what: "rod length |x|² = l² and its velocity level x·ẋ = 0, 1000 steps of 0.005: largest residual",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "released", 0.005, 1000)?;
                value(drift(&r, "holonomic 1")?.max(drift(&r, "holonomic 1 (velocity)")?))
            },
        },
    ]
}

/// A magnetic (velocity-dependent) potential, a mass matrix that depends on the configuration, and a chain of coupled oscillators.
fn coupled() -> Vec<Check> {
    vec![
        Check {
            model: "charged_particle",
            schemes: GENERAL,
            what:
                "Larmor circle e^{−iω_c t}, uniform drift along B (closed form) at t = 3, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let wc = p(c, "e") * p(c, "B") / p(c, "m");
                converges(c, "gyrating", 3.0, 0.01, move |q, _, t| {
                    max_diff(q, &[(wc * t).cos(), -(wc * t).sin(), 0.3 * t])
                })
            },
        },
        Check {
            model: "double_pendulum",
            schemes: GENERAL,
            what: "RK4 of the hand-derived equations (2×2 mass matrix) at t = 2, h = 0.0025: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (m1, m2, l1, l2, g) = (p(c, "m1"), p(c, "m2"), p(c, "l1"), p(c, "l2"), p(c, "g"));
                let want = rk4(
                    |_, y| {
                        let (a, b, da, db) = (y[0], y[1], y[2], y[3]);
                        let (s, co) = ((a - b).sin(), (a - b).cos());
                        let m11 = (m1 + m2) * l1 * l1;
                        let m12 = m2 * l1 * l2 * co;
                        let m22 = m2 * l2 * l2;
                        let f1 = -m2 * l1 * l2 * db * db * s - (m1 + m2) * g * l1 * a.sin();
                        let f2 = m2 * l1 * l2 * da * da * s - m2 * g * l2 * b.sin();
                        let det = m11 * m22 - m12 * m12;
                        vec![da, db, (m22 * f1 - m12 * f2) / det, (m11 * f2 - m12 * f1) / det]
                    },
                    &[1.0, -0.5, 0.0, 1.0],
                    2.0,
                    40_000,
                );
                converges(c, "swinging", 2.0, 0.005, move |q, _, _| max_diff(q, &want[..2]))
            },
        },
        Check {
            model: "harmonic_chain",
            schemes: ALL,
            what: "normal mode 1, u_i = A sin(iπ/5) cos(ω₁t) (closed form) at t = 5, h = 0.005: max |error|, order",
            bound: 1e-4,
            run: |c| {
                let (m, k, a) = (p(c, "m"), p(c, "k"), p(c, "A"));
                converges(c, "mode1", 5.0, 0.01, move |q, _, t| {
                    let n = q.len() as f64;
                    let w = 2.0 * (k / m).sqrt() * (std::f64::consts::PI / (2.0 * (n + 1.0))).sin();
                    let want: Vec<f64> = (1..=q.len())
                        .map(|i| a * (i as f64 * std::f64::consts::PI / (n + 1.0)).sin() * (w * t).cos())
                        .collect();
                    max_diff(q, &want)
                })
            },
        },
    ]
}

/// Particles on constraint surfaces.
fn constraint_surfaces() -> Vec<Check> {
    vec![
        Check {
            model: "particle_on_sphere",
            schemes: HOLONOMIC,
            what: "great circle cos(ωt) x₀ + sin(ωt) ẋ₀/ω (closed form) at t = 5, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let rr = p(c, "R");
                converges(c, "moving", 5.0, 0.01, move |q, _, t| {
                    let w = 1.0 / rr;
                    let (co, s) = ((w * t).cos(), (w * t).sin());
                    max_diff(q, &[rr * co, 0.6 * s / w, 0.8 * s / w])
                })
            },
        },
        Check {
            model: "particle_on_sphere",
            schemes: &["rattle", "energy_momentum"],
            what: "drift of the angular momentum m x × ẋ (every rotation a symmetry) and constraint, 1000 steps of 0.005",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "moving", 0.005, 1000)?;
                value(
                    drift(&r, "Jx")?
                        .max(drift(&r, "Jy")?)
                        .max(drift(&r, "Jz")?)
                        .max(drift(&r, "holonomic 1")?),
                )
            },
        },
        Check {
            model: "particle_on_paraboloid",
            schemes: HOLONOMIC,
            what: "horizontal circle at ω = √(2cg) (closed form) at t = 3, h = 0.0025: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (g, cc, rho) = (p(c, "g"), p(c, "c"), p(c, "rho"));
                converges(c, "circling", 3.0, 0.005, move |q, _, t| {
                    let w = (2.0 * cc * g).sqrt();
                    max_diff(q, &[rho * (w * t).cos(), rho * (w * t).sin(), cc * rho * rho])
                })
            },
        },
        Check {
            model: "particle_on_cone",
            schemes: HOLONOMIC,
            what: "horizontal circle at ω = √(gk/ρ) (closed form) at t = 3, h = 0.0025: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (g, k, rho) = (p(c, "g"), p(c, "k"), p(c, "rho"));
                converges(c, "circling", 3.0, 0.005, move |q, _, t| {
                    let w = (g * k / rho).sqrt();
                    max_diff(q, &[rho * (w * t).cos(), rho * (w * t).sin(), k * rho])
                })
            },
        },
        Check {
            model: "bead_on_torus",
            schemes: &["rattle", "energy_momentum"],
            what: "constraint residual and (rattle) drift of J_z, (energy_momentum) relative energy error, 2000 steps of 0.01",
            bound: 1e-13,
            run: |c| {
                let r = simulate(c, "rolling", 0.01, 2000)?;
                let kept = if c.scheme() == "rattle" { drift(&r, "Jz")? } else { drift(&r, "energy")? };
                value(drift(&r, "holonomic 1")?.max(kept))
            },
        },
        Check {
            model: "bead_on_torus",
            schemes: &["stormer_verlet"],
            what: "index-reduced: drift off the torus over 200 steps of 0.01 (O(h²); the run is flagged and the warning names the drift and the remedy)",
            bound: 1e-3,
            run: |c| {
                let r = simulate_any(c, "rolling", 0.01, 200)?;
                let w = r.warnings();
                if !w.iter().any(|w| w.contains("index-reduced") && w.contains("use rattle or energy_momentum")) {
                    return Err(format!("the drift is not named: {w:?}"));
                }
                value(drift(&r, "holonomic 1")?)
            },
        },
    ]
}

/// Rigid bodies turning about a point: free, heavy, driven.
fn rigid_bodies() -> Vec<Check> {
    vec![
        Check {
            model: "free_rigid_body",
            schemes: HAMEL,
            what: "RK4 of Euler's equations IΩ' = IΩ × Ω, Γ' = Γ × Ω at t = 4, h = 0.005: max |Γ error|, order",
            bound: 1e-3,
            run: |c| {
                let im: [f64; 3] = [0.1, 2.0, 0.3];
                let n = (im[0] * im[0] + im[1] * im[1] + im[2] * im[2]).sqrt();
                let y0 = [im[0] / n, im[1] / n, im[2] / n, 0.1, 1.0, 0.1];
                let want = rk4(euler_poisson([1.0, 2.0, 3.0], 0.0, |_| [0.0; 3]), &y0, 4.0, 40_000);
                converges(c, "tumbling", 4.0, 0.01, move |q, _, _| max_diff(q, &want[..3]))
            },
        },
        Check {
            model: "heavy_top",
            schemes: HAMEL,
            what: "RK4 of Euler–Poisson IΩ' = IΩ × Ω + mgl Γ × e₃, Γ' = Γ × Ω at t = 2, h = 0.002: max |Γ error|, order",
            bound: 2e-3,
            run: |c| {
                let y0 = [0.0, 0.5f64.sin(), 0.5f64.cos(), 0.3, -0.2, 12.0];
                let want = rk4(euler_poisson([1.0, 1.0, 0.5], 9.81 * 0.4, |_| [0.0; 3]), &y0, 2.0, 40_000);
                converges(c, "tilted", 2.0, 0.004, move |q, _, _| max_diff(q, &want[..3]))
            },
        },
        Check {
            model: "heavy_top",
            schemes: HAMEL,
            what: "drift of the Casimirs |Γ|, ⟨IΩ, Γ⟩ and of the spin Ω₃, 1000 steps of 0.002",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "tilted", 0.002, 1000)?;
                value(drift(&r, "length")?.max(drift(&r, "vertical_momentum")?).max(drift(&r, "spin")?))
            },
        },
        Check {
            model: "lagrange_top_matrix",
            schemes: HAMEL,
            what: "Γ = Rᵀẑ against RK4 of Euler–Poisson (the state of heavy_top) at t = 2, h = 0.002: max |error|, order",
            bound: 2e-3,
            run: |c| {
                let y0 = [0.0, 0.5f64.sin(), 0.5f64.cos(), 0.3, -0.2, 12.0];
                let want = rk4(euler_poisson([1.0, 1.0, 0.5], 9.81 * 0.4, |_| [0.0; 3]), &y0, 2.0, 40_000);
                converges(c, "tilted", 2.0, 0.004, move |q, _, _| max_diff(&[q[2], q[5], q[8]], &want[..3]))
            },
        },
        Check {
            model: "lagrange_top_matrix",
            schemes: HAMEL,
            what: "drift of e₁·e₂, |e₃|, the vertical angular momentum and the spin, 1000 steps of 0.002",
            bound: 1e-12,
            run: |c| {
                let r = simulate(c, "tilted", 0.002, 1000)?;
                value(
                    drift(&r, "orthogonality")?
                        .max(drift(&r, "unit")?)
                        .max(drift(&r, "vertical_momentum")?)
                        .max(drift(&r, "spin")?),
                )
            },
        },
        Check {
            model: "satellite_torque",
            schemes: HAMEL,
            what: "RK4 of IΩ' = IΩ × Ω + τ(t), Γ' = Γ × Ω with the thrusters' schedule at t = 4, h = 0.005: max |error| of (Γ, Ω), order",
            bound: 1e-3,
            run: |c| {
                let (a, w) = (p(c, "a"), p(c, "w"));
                let tau = move |t: f64| [a * (w * t).sin(), 0.5 * a * (w * t).cos(), 0.2 * a];
                let want = rk4(euler_poisson([1.0, 2.0, 3.0], 0.0, tau), &[0.0, 0.0, 1.0, 0.2, 0.1, 1.0], 4.0, 40_000);
                converges(c, "spinning", 4.0, 0.01, move |q, v, _| {
                    max_diff(q, &want[..3]).max(max_diff(v, &want[3..]))
                })
            },
        },
    ]
}

/// Bodies whose centre moves as well: a planar body in flight, a cart carrying a spherical pendulum.
fn translating_bodies() -> Vec<Check> {
    vec![
        Check {
            model: "planar_body",
            schemes: HAMEL,
            what: "centre of mass on a parabola, constant spin (closed form) at t = 2, h = 0.002: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (a, g) = (p(c, "a"), p(c, "g"));
                converges(c, "thrown", 2.0, 0.004, move |q, _, t| {
                    let (th0, u0, v0, om0) = (0.3f64, 2.0, 3.0, 4.0);
                    let vc = [
                        th0.cos() * u0 - th0.sin() * (v0 + a * om0),
                        th0.sin() * u0 + th0.cos() * (v0 + a * om0),
                    ];
                    let want = [
                        a * th0.cos() + vc[0] * t,
                        a * th0.sin() + vc[1] * t - 0.5 * g * t * t,
                        th0 + om0 * t,
                    ];
                    max_diff(&[q[0] + a * q[2].cos(), q[1] + a * q[2].sin(), q[2]], &want)
                })
            },
        },
        Check {
            model: "cart_spherical_pendulum",
            schemes: HAMEL,
            what: "RK4 of the cart and bob in Cartesian coordinates with a multiplier at t = 3, h = 0.005: max |error|, order",
            bound: 5e-3,
            run: |c| {
                let (big_m, m, r, g) = (p(c, "M"), p(c, "m"), p(c, "r"), p(c, "g"));
                let (e0, w0) = ([0.6, 0.0, -0.8], [0.5, 1.2, 0.375]);
                let we = cross(w0, e0);
                let s0 = [
                    0.2,
                    -0.1,
                    0.3,
                    0.1,
                    0.2 + r * e0[0],
                    -0.1 + r * e0[1],
                    r * e0[2],
                    0.3 + r * we[0],
                    0.1 + r * we[1],
                    r * we[2],
                ];
                let s = rk4(
                    |_, s| {
                        let d = [s[4] - s[0], s[5] - s[1], s[6]];
                        let dd = [s[7] - s[2], s[8] - s[3], s[9]];
                        let vv = dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2];
                        let lambda = (vv - g * d[2]) / (r * r / m + (d[0] * d[0] + d[1] * d[1]) / big_m);
                        vec![
                            s[2],
                            s[3],
                            lambda * d[0] / big_m,
                            lambda * d[1] / big_m,
                            s[7],
                            s[8],
                            s[9],
                            -lambda * d[0] / m,
                            -lambda * d[1] / m,
                            -g - lambda * d[2] / m,
                        ]
                    },
                    &s0,
                    3.0,
                    60_000,
                );
                let want = [s[0], s[1], (s[4] - s[0]) / r, (s[5] - s[1]) / r, s[6] / r];
                converges(c, "swinging", 3.0, 0.01, move |q, _, _| max_diff(q, &want))
            },
        },
    ]
}

/// Nonholonomic systems.
fn nonholonomic() -> Vec<Check> {
    vec![
        Check {
            model: "chaplygin_sleigh_bloch",
            schemes: HAMEL,
            what: "RK4 of v̇ = aω², ω̇ = −mavω/(I + ma²), (ẋ, ẏ) = v(cos θ, sin θ) at t = 5, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (m, a, i) = (p(c, "m"), p(c, "a"), p(c, "I"));
                let want = rk4(
                    |_, y| {
                        let (th, v, w) = (y[2], y[3], y[4]);
                        vec![v * th.cos(), v * th.sin(), w, a * w * w, -m * a * v * w / (i + m * a * a)]
                    },
                    &[0.0, 0.0, 0.0, 1.0, 1.0],
                    5.0,
                    50_000,
                );
                converges(c, "push", 5.0, 0.01, move |q, _, _| max_diff(q, &want[..3]))
            },
        },
        Check {
            model: "chaplygin_sleigh_bloch",
            schemes: HAMEL,
            what: "relative energy error (its only integral), 1000 steps of 0.005: O(h²) here, since L depends on θ (the body-frame sleigh, models/chaplygin_sleigh.hamel, keeps it to round-off under midpoint kinematics)",
            bound: 1e-5,
            run: |c| {
                let r = simulate(c, "push", 0.005, 1000)?;
                value(drift(&r, "energy")?)
            },
        },
        Check {
            model: "rolling_disk",
            schemes: HAMEL,
            what: "circle of radius Rθ̇/φ̇ (closed form) at t = 5, h = 0.005: max |error| of (x, y, θ, φ), order",
            bound: 1e-3,
            run: |c| {
                let rr = p(c, "R");
                converges(c, "rolling", 5.0, 0.01, move |q, _, t| {
                    let (dth, dph) = (2.0, 0.8);
                    let rho = rr * dth / dph;
                    let ph = dph * t;
                    max_diff(q, &[rho * ph.sin(), rho * (1.0 - ph.cos()), dth * t, ph])
                })
            },
        },
        Check {
            model: "knife_edge_incline",
            schemes: HAMEL,
            what: "x = (g sin α/2ω²) sin²ωt, y = (g sin α/2ω²)(ωt − ½ sin 2ωt) (closed form, Bloch §1.6) at t = 4, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (g, al) = (p(c, "g"), p(c, "alpha"));
                converges(c, "turning", 4.0, 0.01, move |q, _, t| {
                    let w: f64 = 2.0;
                    let s = g * al.sin() / (2.0 * w * w);
                    max_diff(
                        q,
                        &[
                            s * (w * t).sin().powi(2),
                            s * (w * t - 0.5 * (2.0 * w * t).sin()),
                            w * t,
                        ],
                    )
                })
            },
        },
        Check {
            model: "suslov",
            schemes: HAMEL,
            what: "RK4 of I₁Ω̇₁ = −(I₁₃Ω₁ + I₂₃Ω₂)Ω₂, I₂Ω̇₂ = (I₁₃Ω₁ + I₂₃Ω₂)Ω₁, Γ' = Γ × Ω at t = 4, h = 0.005: max |error|, order",
            bound: 1e-3,
            run: |c| {
                let (i1, i2, i13, i23) = (p(c, "I1"), p(c, "I2"), p(c, "I13"), p(c, "I23"));
                let want = rk4(
                    |_, y| {
                        let om = [y[3], y[4], 0.0];
                        let k = i13 * om[0] + i23 * om[1];
                        let mut d = cross([y[0], y[1], y[2]], om).to_vec();
                        d.extend([-k * om[1] / i1, k * om[0] / i2]);
                        d
                    },
                    &[0.0, 0.0, 1.0, 1.0, 0.5],
                    4.0,
                    40_000,
                );
                converges(c, "turning", 4.0, 0.01, move |q, v, _| {
                    max_diff(q, &want[..3]).max(max_diff(&v[..2], &want[3..]))
                })
            },
        },
        Check {
            model: "suslov",
            schemes: &["hamel_midpoint"],
            what: "relative energy error ½(I₁Ω₁² + I₂Ω₂²), 1000 steps of 0.005 (midpoint kinematics: round-off)",
            bound: 1e-13,
            run: |c| {
                let r = simulate(c, "turning", 0.005, 1000)?;
                value(drift(&r, "energy")?)
            },
        },
    ]
}

/// Controlled systems.
fn controlled() -> Vec<Check> {
    vec![
        Check {
            model: "cart_pole",
            schemes: GENERAL,
            what: "LQR (Q = I, R = 1) on the scheme's (A, B) at upright, h = 0.01, from a 0.05 rad tilt: max ‖δz_k − (A − BK)^k δz_0‖ / max ‖(A − BK)^k δz_0‖ (designed decay)",
            bound: 0.02,
            run: |c| lqr_decay(c, 0.01),
        },
        Check {
            model: "cart_inverted_spherical_pendulum",
            schemes: HAMEL,
            what: "LQR (Q = I, R = I) on the scheme's (A, B) at upright, in its controllable subspace, h = 0.01, from a 3.4° tilt: max ‖δz_k − (A − BK)^k δz_0‖ / max ‖(A − BK)^k δz_0‖",
            bound: 0.02,
            run: |c| lqr_decay(c, 0.01),
        },
    ]
}
