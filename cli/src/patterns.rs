//! Reduced coordinates and pattern evocation for chains with a vertical
//! symmetry (docs/schemes.md §9, W95 §2–4).
//!
//! The points are the bob positions `P₁ … P_n` (pivot at the origin); link `i`
//! is `L_i = P_i − P_{i−1}`. Reduced coordinates: `r_i` = horizontal length of
//! link `i`, `θ_i` (i ≥ 2) = angle from the horizontal projection of link 1 to
//! that of link `i`. The cyclic coordinate is the azimuth `φ` of link 1, so
//! the critical rate `Ω_c` is the long-time mean of `φ̇`; any other
//! equivariant azimuth differs from `φ` by a bounded function of the shape and
//! has the same mean rate. The dominant reduced period is the peak of the
//! periodogram of `r₁`.

use std::f64::consts::PI;
use std::path::Path;

use hamel_compiler::emit::compiled::CompiledStep;

use crate::simulate::Run;
use crate::{Error, System};

/// Where a point's three components come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// components `offset..offset + 3` of the model's `let` values
    Let(usize),
    /// three coordinate components
    Coordinate([usize; 3]),
}

/// Chooses the bob positions: the names given (vector `let`s or `vec3`
/// coordinates), or by default the lets `x[1], x[2], …`, else `x1, x2, …`,
/// else every `vec3` coordinate (Cartesian models).
pub fn points(c: &CompiledStep, requested: &[String]) -> Result<Vec<(String, Source)>, Error> {
    let mut offsets = Vec::new();
    let mut k = 0;
    for (n, len) in &c.lets {
        offsets.push((n.clone(), k, *len));
        k += len;
    }
    let let_vec = |name: &str| {
        offsets
            .iter()
            .find(|(n, _, l)| n == name && *l == 3)
            .map(|(_, o, _)| *o)
    };
    let coord = |name: &str| {
        let f = |i: usize| c.coordinates.iter().position(|x| *x == format!("{name}[{i}]"));
        match (f(0), f(1), f(2)) {
            (Some(a), Some(b), Some(d)) => Some([a, b, d]),
            _ => None,
        }
    };
    if !requested.is_empty() {
        return requested
            .iter()
            .map(|n| {
                let n = n.trim();
                if let Some(o) = let_vec(n) {
                    Ok((n.to_string(), Source::Let(o)))
                } else if let Some(ix) = coord(n) {
                    Ok((n.to_string(), Source::Coordinate(ix)))
                } else {
                    Err(Error::Usage(format!(
                        "--points: `{n}` is neither a vector `let` nor a vec3 coordinate of model `{}`",
                        c.model
                    )))
                }
            })
            .collect();
    }
    for style in [|i: usize| format!("x[{i}]"), |i: usize| format!("x{i}")] {
        let found: Vec<(String, Source)> = (1..)
            .map_while(|i| {
                let n = style(i);
                let_vec(&n).map(|o| (n, Source::Let(o)))
            })
            .collect();
        if !found.is_empty() {
            return Ok(found);
        }
    }
    let found: Vec<(String, Source)> = c
        .coordinates
        .iter()
        .filter_map(|n| n.strip_suffix("[0]"))
        .filter_map(|b| coord(b).map(|ix| (b.to_string(), Source::Coordinate(ix))))
        .collect();
    if found.is_empty() {
        return Err(Error::Usage(format!(
            "model `{}` has no bob positions to analyse: give --points with vector lets or vec3 coordinates",
            c.model
        )));
    }
    Ok(found)
}

/// Bob positions at every record of `run`: `[record][point]`.
pub fn positions(sys: &System, run: &Run, pts: &[(String, Source)]) -> Vec<Vec<[f64; 3]>> {
    let need_lets = pts.iter().any(|(_, s)| matches!(s, Source::Let(_)));
    (0..run.steps.len())
        .map(|k| {
            let lets = if need_lets {
                sys.lets(&run.q[k], &run.v[k])
            } else {
                Vec::new()
            };
            pts.iter()
                .map(|(_, s)| match s {
                    Source::Let(o) => [lets[*o], lets[o + 1], lets[o + 2]],
                    Source::Coordinate(ix) => [run.q[k][ix[0]], run.q[k][ix[1]], run.q[k][ix[2]]],
                })
                .collect()
        })
        .collect()
}

/// What the analysis found.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// times of the samples
    pub t: Vec<f64>,
    /// reduced coordinates: `r1, r2, …, theta2, …`, one series each
    pub reduced: Vec<(String, Vec<f64>)>,
    /// unwrapped azimuth of link 1
    pub azimuth: Vec<f64>,
    /// dominant period of `r1` (None: no oscillation, e.g. a relative equilibrium)
    pub reduced_period: Option<f64>,
    /// periodogram of `r1`: (frequency, power)
    pub spectrum: Vec<(f64, f64)>,
    /// mean rate of the azimuth, over a whole number of reduced periods where there is one
    pub critical_rate: f64,
    /// how many reduced periods the rate was averaged over (0: the whole run, least squares)
    pub periods_averaged: usize,
    /// the same mean over the first and over the last half of those periods
    /// (None for fewer than two periods): where they differ, `Ω_c` has not
    /// converged (e.g. link 1 passing near the axis, θ₂ circulating)
    pub rate_halves: Option<(f64, f64)>,
    /// smallest horizontal length of the vector the azimuth is read from
    /// ([`Analysis::azimuth_of`]) over the run, relative to its largest: near
    /// zero, the azimuth (the cyclic coordinate) is ill-conditioned
    pub axis_clearance: f64,
    /// the vector whose azimuth measures the rotation (`link 1`, `bob 2`, …):
    /// of links and bob positions, the one that stays farthest from the axis
    pub azimuth_of: String,
    /// how a perturbation grows (see [`divergence`]); `None` if not measured
    pub divergence: Option<Divergence>,
}

/// How fast a tiny perturbation of the run grows, measured segment by segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Divergence {
    /// length of a segment, seconds (five reduced periods, or half the run)
    pub segment: f64,
    /// segments measured
    pub segments: usize,
    /// growth over the run's second half (`span`): about 2 for motion whose
    /// perturbations grow linearly in time ((quasi)periodic motion),
    /// `e^(rate·span)` for unstable or chaotic motion
    pub growth: f64,
    /// seconds the growth is measured over
    pub span: f64,
    /// `ln(growth) / span`, 1/s: the finite-time divergence rate (an estimate
    /// of the largest Lyapunov exponent)
    pub rate: f64,
}

impl Analysis {
    /// Whether the critical rate has converged: its means over the first and
    /// the last half of the averaged periods agree to 1e-3 (relative).
    pub fn converged(&self) -> bool {
        self.rate_halves
            .is_some_and(|(x, y)| (x - y).abs() <= 1e-3 * x.abs().max(1e-12))
    }

    /// Whether the azimuth is ill-conditioned (clearance below 5 %).
    pub fn ill_conditioned(&self) -> bool {
        self.axis_clearance < 0.05
    }

    /// Whether a tiny perturbation grows more than [`UNSTABLE_GROWTH`]-fold
    /// over the run's second half: the motion is unstable (or chaotic) and
    /// the pattern it evokes does not last. Growth as a power of time gives a
    /// bounded factor there at every run length, so the verdict does not
    /// depend on it.
    pub fn unstable(&self) -> bool {
        self.divergence.is_some_and(|d| d.growth > UNSTABLE_GROWTH)
    }
}

fn horizontal(a: [f64; 3], b: [f64; 3]) -> (f64, f64) {
    (a[0] - b[0], a[1] - b[1])
}

fn wrap(a: f64) -> f64 {
    let mut a = a % (2.0 * PI);
    if a > PI {
        a -= 2.0 * PI;
    } else if a < -PI {
        a += 2.0 * PI;
    }
    a
}

/// Analyses bob positions `pos[record][point]` at times `t`.
pub fn analyse(t: &[f64], pos: &[Vec<[f64; 3]>]) -> Analysis {
    let n_pts = pos.first().map_or(0, |p| p.len());
    let link = |k: usize, i: usize| {
        let prev = if i == 0 { [0.0; 3] } else { pos[k][i - 1] };
        horizontal(pos[k][i], prev)
    };
    let mut reduced = Vec::new();
    for i in 0..n_pts {
        reduced.push((
            format!("r{}", i + 1),
            (0..t.len())
                .map(|k| link(k, i).0.hypot(link(k, i).1))
                .collect::<Vec<f64>>(),
        ));
    }
    for i in 1..n_pts {
        reduced.push((
            format!("theta{}", i + 1),
            (0..t.len())
                .map(|k| {
                    let (a, b) = (link(k, 0), link(k, i));
                    wrap(b.1.atan2(b.0) - a.1.atan2(a.0))
                })
                .collect(),
        ));
    }
    // The configuration's rotation is read off the horizontal vector that
    // stays farthest from the vertical axis over the run (a link, or a bob's
    // position): each is rotated with the whole configuration, so over whole
    // reduced periods all give the same net rotation, but one passing near
    // the axis turns fast there and makes the rate ill-conditioned.
    type Horizontal<'a> = Box<dyn Fn(usize) -> (f64, f64) + 'a>;
    let mut candidates: Vec<(String, Horizontal)> = Vec::new();
    for i in 0..n_pts {
        candidates.push((format!("link {}", i + 1), Box::new(move |k| link(k, i))));
        if i > 0 {
            candidates.push((
                format!("bob {}", i + 1),
                Box::new(move |k| horizontal(pos[k][i], [0.0; 3])),
            ));
        }
    }
    let clearance = |f: &dyn Fn(usize) -> (f64, f64)| {
        let (lo, hi) = (0..t.len()).fold((f64::INFINITY, 0.0f64), |(lo, hi), k| {
            let (x, y) = f(k);
            let r = x.hypot(y);
            (lo.min(r), hi.max(r))
        });
        if hi > 0.0 {
            lo / hi
        } else {
            0.0
        }
    };
    let (azimuth_of, axis_clearance) = candidates.iter().map(|(n, f)| (n.clone(), clearance(f.as_ref()))).fold(
        (String::from("link 1"), -1.0),
        |best, c| if c.1 > best.1 { c } else { best },
    );
    let axis_clearance = axis_clearance.max(0.0);
    let f = &candidates
        .iter()
        .find(|(n, _)| *n == azimuth_of)
        .expect("a candidate was chosen")
        .1;
    let mut azimuth = Vec::with_capacity(t.len());
    for k in 0..t.len() {
        let (x, y) = f(k);
        let a = y.atan2(x);
        azimuth.push(match azimuth.last() {
            Some(&prev) => prev + wrap(a - prev),
            None => a,
        });
    }
    let (spectrum, reduced_period) = dominant_period(t, &reduced[0].1);
    let (critical_rate, periods_averaged) = mean_rate(t, &azimuth, reduced_period);
    let rate_halves = match reduced_period {
        Some(p) if periods_averaged >= 2 => {
            let m = periods_averaged / 2;
            let at = |te: f64| interpolate(t, &azimuth, te);
            let (t0, t1, t2) = (t[0], t[0] + m as f64 * p, t[0] + periods_averaged as f64 * p);
            let t_lo = t[0] + (periods_averaged - m) as f64 * p;
            Some(((at(t1) - at(t0)) / (t1 - t0), (at(t2) - at(t_lo)) / (t2 - t_lo)))
        }
        _ => None,
    };
    Analysis {
        t: t.to_vec(),
        reduced,
        azimuth,
        reduced_period,
        spectrum,
        critical_rate,
        periods_averaged,
        rate_halves,
        axis_clearance,
        azimuth_of,
        divergence: None,
    }
}

/// `phi` at time `te`, linearly interpolated.
fn interpolate(t: &[f64], phi: &[f64], te: f64) -> f64 {
    let n = t.len();
    let j = t.partition_point(|&x| x < te).clamp(1, n - 1);
    let w = (te - t[j - 1]) / (t[j] - t[j - 1]);
    phi[j - 1] + w * (phi[j] - phi[j - 1])
}

/// Periodogram of `x(t)` (uniform samples, mean removed, at most 4096 of
/// them, 4× oversampled frequency grid) and the period of its highest peak,
/// refined by a parabola through the peak's neighbours. No period when the
/// signal does not oscillate (relative spread below 1e-9) or when the peak
/// lies at the lowest frequency (less than about two periods in the run).
pub fn dominant_period(t: &[f64], x: &[f64]) -> (Vec<(f64, f64)>, Option<f64>) {
    if t.len() < 8 {
        return (Vec::new(), None);
    }
    let stride = t.len().div_ceil(4096);
    let ts: Vec<f64> = t.iter().step_by(stride).copied().collect();
    let xs: Vec<f64> = x.iter().step_by(stride).copied().collect();
    let n = ts.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let scale = xs.iter().map(|v| v.abs()).fold(0.0, f64::max).max(1e-300);
    let spread = xs.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
    let span = ts[n - 1] - ts[0];
    if span <= 0.0 {
        return (Vec::new(), None);
    }
    let df = 1.0 / (4.0 * span);
    let dt = span / (n - 1) as f64;
    let fmax = 0.5 / dt;
    let m = ((fmax / df) as usize).max(2);
    let power = |f: f64| {
        let (mut re, mut im) = (0.0, 0.0);
        for (tk, xk) in ts.iter().zip(&xs) {
            let ph = 2.0 * PI * f * tk;
            re += (xk - mean) * ph.cos();
            im -= (xk - mean) * ph.sin();
        }
        (re * re + im * im) / (n as f64 * n as f64)
    };
    let spectrum: Vec<(f64, f64)> = (1..=m).map(|j| (j as f64 * df, power(j as f64 * df))).collect();
    if spread <= 1e-9 * scale {
        return (spectrum, None);
    }
    let (jmax, _) = spectrum.iter().enumerate().fold(
        (0, -1.0),
        |(bj, bp), (j, &(_, p))| if p > bp { (j, p) } else { (bj, bp) },
    );
    // At least two periods in the run, so the peak is not the lowest few bins.
    if jmax < 8 || jmax + 1 >= spectrum.len() {
        return (spectrum, None);
    }
    let (a, b, c) = (
        spectrum[jmax - 1].1.ln(),
        spectrum[jmax].1.ln(),
        spectrum[jmax + 1].1.ln(),
    );
    let denom = a - 2.0 * b + c;
    let shift = if denom.abs() > 0.0 { 0.5 * (a - c) / denom } else { 0.0 };
    let f = spectrum[jmax].0 + shift.clamp(-0.5, 0.5) * df;
    (spectrum, Some(1.0 / f))
}

/// Mean rate of `phi(t)`: over the largest whole number of reduced periods
/// in the run (linear interpolation at the end point), else by least squares.
fn mean_rate(t: &[f64], phi: &[f64], period: Option<f64>) -> (f64, usize) {
    let n = t.len();
    if n < 2 {
        return (0.0, 0);
    }
    let span = t[n - 1] - t[0];
    if let Some(p) = period {
        let k = (span / p).floor() as usize;
        if k >= 1 {
            let te = t[0] + k as f64 * p;
            return ((interpolate(t, phi, te) - phi[0]) / (te - t[0]), k);
        }
    }
    let tm = t.iter().sum::<f64>() / n as f64;
    let pm = phi.iter().sum::<f64>() / n as f64;
    let num: f64 = t.iter().zip(phi).map(|(a, b)| (a - tm) * (b - pm)).sum();
    let den: f64 = t.iter().map(|a| (a - tm) * (a - tm)).sum();
    (num / den, 0)
}

/// Horizontal positions seen from a frame rotating about the vertical at
/// `rate`: `x̃(t) = exp(−rate t ê₃) x(t)`; one curve per point.
pub fn rotating(t: &[f64], pos: &[Vec<[f64; 3]>], rate: f64) -> Vec<Vec<(f64, f64)>> {
    let n_pts = pos.first().map_or(0, |p| p.len());
    (0..n_pts)
        .map(|i| {
            t.iter()
                .zip(pos)
                .map(|(&tk, p)| {
                    let (s, c) = (-rate * tk).sin_cos();
                    let [x, y, _] = p[i];
                    (c * x - s * y, s * x + c * y)
                })
                .collect()
        })
        .collect()
}

/// Writes the figures of a pattern analysis into `dir`: reduced coordinates,
/// periodogram, and top views from the inertial frame, the frame rotating at
/// `Ω_c`, and frames rotating at each of `rates`.
pub fn write_plots(
    dir: &Path,
    run: &Run,
    a: &Analysis,
    pos: &[Vec<[f64; 3]>],
    names: &[&str],
    rates: &[f64],
) -> Result<(), Error> {
    use crate::plot::{self, Curve, Labels};
    let case = format!(
        "{} ({})",
        run.initial.clone().unwrap_or_else(|| run.model.clone()),
        run.scheme
    );
    let series = |pred: &dyn Fn(&str) -> bool| -> Vec<Curve> {
        a.reduced
            .iter()
            .filter(|(n, _)| pred(n))
            .map(|(n, v)| Curve {
                label: n.clone(),
                points: a.t.iter().copied().zip(v.iter().copied()).collect(),
            })
            .collect()
    };
    plot::line_plot(
        dir,
        "reduced_r",
        &Labels {
            title: &format!("Reduced r_i — {case}"),
            x: "t",
            y: "horizontal link length",
        },
        &series(&|n| n.starts_with('r')),
        false,
    )?;
    let th = series(&|n| n.starts_with("theta"));
    if !th.is_empty() {
        plot::line_plot(
            dir,
            "reduced_theta",
            &Labels {
                title: &format!("Reduced θ_i — {case}"),
                x: "t",
                y: "angle to link 1 (rad)",
            },
            &th,
            false,
        )?;
    }
    if !a.spectrum.is_empty() {
        // The band around the dominant frequency, not up to Nyquist.
        let f_max = match a.reduced_period {
            Some(p) => 8.0 / p,
            None => a.spectrum[a.spectrum.len() / 10].0,
        };
        let band: Vec<(f64, f64)> = a.spectrum.iter().copied().filter(|&(f, _)| f <= f_max).collect();
        let title = match a.reduced_period {
            Some(p) => format!("Periodogram of r1 — dominant period {p:.4} s"),
            None => "Periodogram of r1 — no dominant period".to_string(),
        };
        plot::log_plot(
            dir,
            "spectrum",
            &Labels {
                title: &title,
                x: "frequency (Hz)",
                y: "power",
            },
            &[Curve {
                label: "r1".into(),
                points: band,
            }],
        )?;
    }
    let mut views = vec![
        ("rotating_inertial".to_string(), 0.0, "inertial (Ω = 0)".to_string()),
        (
            "rotating_critical".to_string(),
            a.critical_rate,
            format!("rotating at Ω_c = {:.5}", a.critical_rate),
        ),
    ];
    for (i, &r) in rates.iter().enumerate() {
        views.push((format!("rotating_rate{}", i + 1), r, format!("rotating at Ω = {r}")));
    }
    for (stem, rate, what) in views {
        let curves: Vec<Curve> = rotating(&a.t, pos, rate)
            .into_iter()
            .zip(names)
            .map(|(points, n)| Curve {
                label: n.to_string(),
                points,
            })
            .collect();
        plot::line_plot(
            dir,
            &stem,
            &Labels {
                title: &format!("Top view, {what} — {case}"),
                x: "x̃",
                y: "ỹ",
            },
            &curves,
            true,
        )?;
    }
    Ok(())
}

/// An analysis with the bob positions it was made from (`[record][point]`) and the points' names.
pub type Study = (Analysis, Vec<Vec<[f64; 3]>>, Vec<String>);

/// Relative size of the perturbation of the twin runs of [`divergence`].
pub const TWIN_EPS: f64 = 1e-9;

/// Growth over the second half of a run above which the motion is called
/// unstable: growth as a power `t^p` of time gives at most `2^p` there, so 4
/// is faster than any growth up to quadratic, at every run length. (W95 at
/// h = 0.01: II 1.9–2.9 over 30–300 s; I 49–1000 over 100–300 s; III 5 at
/// 30 s, 3e19 at 300 s.)
pub const UNSTABLE_GROWTH: f64 = 4.0;

/// A twin of the state `(q, v)`: every velocity scaled by `1 + TWIN_EPS`
/// (which keeps linear velocity constraints); at rest, where that is no
/// perturbation, every `vec3` coordinate turned by `TWIN_EPS` about the x
/// axis (which keeps norms, dot products and constraints on them), or
/// scalar coordinates moved by `TWIN_EPS` (relative).
fn twin(sys: &System, q: &[f64], v: &[f64]) -> Result<hamel_runtime::DynState, Error> {
    let mut q = q.to_vec();
    let mut v = v.to_vec();
    if v.iter().any(|x| *x != 0.0) {
        v.iter_mut().for_each(|x| *x *= 1.0 + TWIN_EPS);
    } else {
        let names = &sys.compiled().coordinates;
        let triples: Vec<[usize; 3]> = names
            .iter()
            .filter_map(|n| n.strip_suffix("[0]"))
            .filter_map(|b| {
                let f = |i: usize| names.iter().position(|x| *x == format!("{b}[{i}]"));
                Some([f(0)?, f(1)?, f(2)?])
            })
            .collect();
        if triples.is_empty() {
            q.iter_mut().for_each(|x| *x += TWIN_EPS * x.abs().max(1.0));
        }
        let (s, c) = TWIN_EPS.sin_cos();
        for [_, y, z] in triples {
            let (a, b) = (q[y], q[z]);
            q[y] = c * a - s * b;
            q[z] = s * a + c * b;
        }
        v.iter_mut().for_each(|x| *x = 0.0);
    }
    Ok(hamel_runtime::Kernels::initial_state(sys, &q, &v)?)
}

/// How a perturbation grows along `run`'s case (Benettin's method): the
/// run is stepped again next to a twin (velocities scaled by `1 + TWIN_EPS`; at
/// rest, tilted by `TWIN_EPS`), cut into segments of five
/// reduced periods (`period`; two halves of the run without one); at the end
/// of each segment the growth of the difference of scheme states is recorded
/// and the difference is scaled back to its starting size, along the
/// direction it grew in, so that a long run never saturates.
pub fn divergence(run: &Run, sys: &System, period: Option<f64>) -> Result<Option<Divergence>, Error> {
    use hamel_runtime::Kernels;
    let opt = &run.options;
    let steps = opt.steps as usize;
    if steps < 20 || run.q.is_empty() {
        return Ok(None);
    }
    let per = match period {
        Some(p) => ((5.0 * p / opt.h).round() as usize).clamp(10, steps),
        None => steps / 2,
    };
    let (q0, v0) = (&run.q[0], &run.v[0]);
    let mut base = sys.initial_state(q0, v0)?;
    let mut other = twin(sys, q0, v0)?;
    let mut stepper = hamel_runtime::StepperOf::new(sys, opt.h)?;
    stepper.options = opt.newton;
    // The size of the difference over a segment's last fifth (root mean
    // square): the difference also oscillates with the motion, and one
    // instant would add that phase to the growth.
    let tail = (per / 5).max(1);
    let (mut logs, mut acc, mut n) = (Vec::new(), 0.0, 0usize);
    let mut start = (&other.z - &base.z).norm();
    for k in 1..=(steps / per) * per {
        stepper.step(&mut base)?;
        stepper.step(&mut other)?;
        let into = (k - 1) % per + 1;
        if into > per - tail {
            acc += (&other.z - &base.z).norm_squared();
            n += 1;
        }
        if into == per {
            let now = (acc / n as f64).sqrt();
            logs.push((now / start).max(f64::MIN_POSITIVE).ln());
            let end = (&other.z - &base.z).norm();
            if end > 0.0 && end.is_finite() {
                other.z = &base.z + (&other.z - &base.z) * (start / end);
                other.lo.fill(0.0);
            }
            start = (&other.z - &base.z).norm() * (now / end);
            (acc, n) = (0.0, 0);
        }
    }
    // The growth over the run's second half: the first half turns the
    // perturbation into the direction that grows most. Growth linear in time
    // (quasi-periodic motion, a drifting phase) gives at most 2 there; an
    // exponential gives as much as over the first half.
    let half = logs.len() / 2;
    let second: f64 = logs[half..].iter().sum();
    let span = (logs.len() - half) as f64 * per as f64 * opt.h;
    if !second.is_finite() || span <= 0.0 {
        return Ok(None);
    }
    let segment = per as f64 * opt.h;
    let rate = second / span;
    Ok(Some(Divergence {
        segment,
        segments: logs.len(),
        growth: second.exp(),
        span,
        rate,
    }))
}

/// Chooses the points, evaluates them on every record and analyses them.
pub fn study(sys: &System, run: &Run, requested: &[String]) -> Result<Study, Error> {
    let pts = points(sys.compiled(), requested)?;
    let pos = positions(sys, run, &pts);
    let t: Vec<f64> = (0..run.steps.len()).map(|k| run.time(k)).collect();
    let names = pts.into_iter().map(|(n, _)| n).collect();
    Ok((analyse(&t, &pos), pos, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_period_and_rate_of_a_synthetic_quasi_periodic_motion() {
        // Link 1 rotates at 0.7 rad/s with a wobble of period 3.3 in length and azimuth.
        let t: Vec<f64> = (0..20_000).map(|k| k as f64 * 0.005).collect();
        let pos: Vec<Vec<[f64; 3]>> = t
            .iter()
            .map(|&t| {
                let w = 2.0 * PI / 3.3;
                let r = 2.0 + 0.3 * (w * t).sin();
                let phi = 0.7 * t + 0.4 * (w * t).cos();
                let p1 = [r * phi.cos(), r * phi.sin(), -1.0];
                let p2 = [p1[0] + phi.cos(), p1[1] + phi.sin(), -2.0];
                vec![p1, p2]
            })
            .collect();
        let a = analyse(&t, &pos);
        let p = a.reduced_period.unwrap();
        assert!((p - 3.3).abs() < 1e-3, "period {p}");
        assert!((a.critical_rate - 0.7).abs() < 1e-6, "rate {}", a.critical_rate);
        // link 2 parallel to link 1: theta2 = 0, r2 = 1
        assert!(a.reduced[2].1.iter().all(|v| v.abs() < 1e-12));
        assert!(a.reduced[1].1.iter().all(|v| (v - 1.0).abs() < 1e-12));
        // in the frame rotating at the critical rate the wobble stays bounded
        let rot = rotating(&t, &pos, a.critical_rate);
        let far = rot[0]
            .iter()
            .map(|&(x, y)| (x - rot[0][0].0).hypot(y - rot[0][0].1))
            .fold(0.0, f64::max);
        assert!(far < 2.0 * (2.3f64 * 0.8), "{far}");
    }
}
