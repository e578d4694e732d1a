//! Plots with `plotters`, each written as SVG and PNG: time series on a log
//! scale (errors), plain line plots (reduced coordinates, top views) and 3-D
//! trajectories. Text uses the embedded DejaVu Sans, so PNGs render the same
//! on machines without fonts.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::Error;

static FONT: Once = Once::new();

fn fonts() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .unwrap_or_else(|_| panic!("the embedded font is valid"));
    });
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(0, 0, 0),
];

/// Color of series `i` (the same across plots, so schemes keep their color).
fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// A labelled curve of `(x, y)` points.
#[derive(Clone, Debug)]
pub struct Curve {
    /// legend label
    pub label: String,
    /// points
    pub points: Vec<(f64, f64)>,
}

/// A labelled curve in space.
#[derive(Clone, Debug)]
pub struct Curve3 {
    /// legend label
    pub label: String,
    /// points `(x, y, z)`, `z` up
    pub points: Vec<[f64; 3]>,
}

/// Axis titles and the plot's title.
#[derive(Clone, Debug)]
pub struct Labels<'a> {
    /// title above the plot
    pub title: &'a str,
    /// x axis
    pub x: &'a str,
    /// y axis
    pub y: &'a str,
}

const SIZE: (u32, u32) = (900, 560);
const MAX_POINTS: usize = 6000;

fn thin<T: Copy>(p: &[T]) -> Vec<T> {
    if p.len() <= MAX_POINTS {
        return p.to_vec();
    }
    let stride = p.len().div_ceil(MAX_POINTS);
    let mut out: Vec<T> = p.iter().step_by(stride).copied().collect();
    out.push(*p.last().expect("non-empty"));
    out
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Output(format!("cannot draw `{}`: {e}", path.display()))
}

/// Draws with `draw` into `dir/stem.svg` and `dir/stem.png`; returns both paths.
fn both(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    draw: impl Fn(DrawingArea<SVGBackend, Shift>) -> Result<(), String> + Copy,
    draw_png: impl Fn(DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
) -> Result<Vec<PathBuf>, Error> {
    fonts();
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    crate::output::refuse_link(&svg)?;
    crate::output::refuse_link(&png)?;
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw(root).map_err(err(&svg))?;
    }
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw_png(root).map_err(err(&png))?;
    }
    Ok(vec![svg, png])
}

/// Tick label: short, no trailing zeros (`200`, `0.25`, `1.5e3`).
fn tick(v: &f64) -> String {
    let v = *v;
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if (1e-3..1e5).contains(&a) {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.1e}").replace(".0e", "e")
    }
}

/// Tick label on a log axis: the power of ten.
fn log_tick(v: &f64) -> String {
    format!("{v:.0e}")
}

fn range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    (lo <= hi).then_some((lo, hi))
}

fn series_2d<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    labels: &Labels,
    curves: &[Curve],
    log_y: bool,
    equal: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let pts = |c: &Curve| -> Vec<(f64, f64)> {
        thin(&c.points)
            .into_iter()
            .filter(|&(x, y)| x.is_finite() && y.is_finite() && (!log_y || y > 0.0))
            .collect()
    };
    let curves: Vec<(String, Vec<(f64, f64)>)> = curves.iter().map(|c| (c.label.clone(), pts(c))).collect();
    let (mut x0, mut x1) = range(curves.iter().flat_map(|c| c.1.iter().map(|p| p.0))).unwrap_or((0.0, 1.0));
    let (mut y0, mut y1) = range(curves.iter().flat_map(|c| c.1.iter().map(|p| p.1))).unwrap_or((1e-17, 1e-15));
    if equal {
        let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        let half = ((x1 - x0).max(y1 - y0) / 2.0).max(1e-12) * 1.05;
        let aspect = SIZE.0 as f64 / SIZE.1 as f64;
        (x0, x1, y0, y1) = (cx - half * aspect, cx + half * aspect, cy - half, cy + half);
    }
    if log_y {
        y0 = y0.max(1e-300) / 2.0;
        // headroom for the legend above the data
        y1 = (y1 * 60.0).max(y0 * 10.0);
    } else if y1 - y0 < 1e-300 {
        (y0, y1) = (y0 - 1.0, y1 + 1.0);
    } else if !equal {
        let pad = 0.05 * (y1 - y0);
        (y0, y1) = (y0 - pad, y1 + pad);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let mut b = ChartBuilder::on(&root);
    b.caption(labels.title, ("sans-serif", 22))
        .margin(14)
        .margin_right(34)
        .x_label_area_size(44)
        .y_label_area_size(84);
    macro_rules! draw_into {
        ($chart:expr, $yfmt:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_label_formatter(&tick)
                .y_label_formatter($yfmt)
                .x_desc(labels.x)
                .y_desc(labels.y)
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 17))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(|x| e(&x))?;
            for (i, (label, p)) in curves.iter().enumerate() {
                let c = color(i);
                // A curve lying exactly on an earlier one would vanish under
                // it: it gets markers and says which it coincides with.
                let twin = (0..i).find(|&j| coincide(&curves[j].1, p));
                let label = match twin {
                    Some(j) if !label.is_empty() => format!("{label} (coincides with {})", curves[j].0),
                    _ => label.clone(),
                };
                if twin.is_some() {
                    // Markers only, so the curve it lies on stays visible.
                    let every = (p.len() / 60).max(1);
                    chart
                        .draw_series(p.iter().step_by(every).map(|&q| Circle::new(q, 4, c.stroke_width(2))))
                        .map_err(|x| e(&x))?
                        .label(label)
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.stroke_width(2)));
                } else {
                    chart
                        .draw_series(LineSeries::new(
                            p.iter().copied(),
                            c.stroke_width(if p.len() > 2000 { 1 } else { 2 }),
                        ))
                        .map_err(|x| e(&x))?
                        .label(label)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
                }
            }
            if curves.len() > 1 || !curves.iter().all(|c| c.0.is_empty()) {
                chart
                    .configure_series_labels()
                    .label_font(("sans-serif", 15))
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(|x| e(&x))?;
            }
        }};
    }
    if log_y {
        draw_into!(
            b.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(|x| e(&x))?,
            &log_tick
        );
    } else {
        draw_into!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(|x| e(&x))?, &tick);
    }
    root.present().map_err(|x| e(&x))
}

/// Whether two curves would be drawn on top of each other: the same
/// abscissae and ordinates within 0.1 % of each other (or of the largest
/// value, for values near zero).
fn coincide(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
    if a.len() != b.len() || a.is_empty() {
        return false;
    }
    let scale = a.iter().map(|p| p.1.abs()).fold(0.0f64, f64::max).max(1e-300);
    a.iter().zip(b).all(|(p, q)| {
        let d = (p.1 - q.1).abs();
        p.0 == q.0 && (d <= 1e-3 * p.1.abs().max(q.1.abs()) || d <= 1e-12 * scale)
    })
}

/// Curves on a log `y` scale (errors vs time); non-positive values are left out.
pub fn log_plot(dir: &Path, stem: &str, labels: &Labels, curves: &[Curve]) -> Result<Vec<PathBuf>, Error> {
    both(
        dir,
        stem,
        SIZE,
        |r| series_2d(r, labels, curves, true, false),
        |r| series_2d(r, labels, curves, true, false),
    )
}

/// Curves on linear axes; with `equal`, both axes have the same scale (top views).
pub fn line_plot(
    dir: &Path,
    stem: &str,
    labels: &Labels,
    curves: &[Curve],
    equal: bool,
) -> Result<Vec<PathBuf>, Error> {
    both(
        dir,
        stem,
        SIZE,
        |r| series_2d(r, labels, curves, false, equal),
        |r| series_2d(r, labels, curves, false, equal),
    )
}

fn series_3d<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, curves: &[Curve3]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let all = || curves.iter().flat_map(|c| c.points.iter());
    let r = all()
        .flat_map(|p| p.iter().map(|v| v.abs()))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-12)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(10)
        .build_cartesian_3d(-r..r, -r..r, -r..r)
        .map_err(|x| e(&x))?;
    chart.with_projection(|mut p| {
        p.yaw = 0.6;
        p.pitch = 0.35;
        p.scale = 0.85;
        p.into_matrix()
    });
    chart
        .configure_axes()
        .label_style(("sans-serif", 13))
        .light_grid_style(RGBColor(230, 230, 230))
        .max_light_lines(3)
        .draw()
        .map_err(|x| e(&x))?;
    // Axis names at the far end of each axis (plotters' 3-D y is our z, up).
    let style = ("sans-serif", 17).into_font().color(&BLACK);
    for (name, at) in [("x", (r, -r, -r)), ("y", (-r, -r, r)), ("z (up)", (-r, r, -r))] {
        chart
            .draw_series(std::iter::once(Text::new(name, at, style.clone())))
            .map_err(|x| e(&x))?;
    }
    for (i, c) in curves.iter().enumerate() {
        let col = color(i);
        // plotters' 3-D y axis is the vertical one.
        let pts: Vec<(f64, f64, f64)> = thin(&c.points).into_iter().map(|p| (p[0], p[2], p[1])).collect();
        chart
            .draw_series(LineSeries::new(pts, col.stroke_width(1)))
            .map_err(|x| e(&x))?
            .label(c.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Curves in space (z up), e.g. bob paths on their spheres.
pub fn trajectory_3d(dir: &Path, stem: &str, title: &str, curves: &[Curve3]) -> Result<Vec<PathBuf>, Error> {
    both(
        dir,
        stem,
        (760, 700),
        |r| series_3d(r, title, curves),
        |r| series_3d(r, title, curves),
    )
}
