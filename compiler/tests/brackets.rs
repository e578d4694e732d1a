//! Frame brackets: the three checks of docs/schemes.md §1 and an invertible frame.

use hamel_compiler::scheme::{Frame, FrameKind, Mechanics};
use hamel_compiler::sym::Id;

fn bracket_of(src: &str) -> (hamel_compiler::Model, Frame) {
    let mut m = hamel_compiler::load("t.hamel", src).unwrap();
    let f = Frame::of(&mut m).unwrap();
    (m, f)
}

fn eval_bracket(m: &mut hamel_compiler::Model, f: &Frame, xi: [f64; 3], eta: [f64; 3], dual: bool) -> Vec<f64> {
    let a: Vec<Id> = xi.iter().map(|&x| m.graph.constant(x)).collect();
    let b: Vec<Id> = eta.iter().map(|&x| m.graph.constant(x)).collect();
    let r = if dual {
        f.co_bracket(&mut m.graph, &a, &b)
    } else {
        f.bracket(&mut m.graph, &a, &b)
    };
    r.iter().map(|&e| m.graph.eval(e, &|_| 0.4)).collect()
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

const XI: [f64; 3] = [0.3, -1.2, 0.7];
const ETA: [f64; 3] = [1.1, 0.4, -0.5];

#[test]
fn body_frame_on_the_sphere() {
    let (mut m, f) = bracket_of(
        "model s { coordinates { gamma: vec3 } velocities { xi: vec3 } frame { gamma' = cross(gamma, xi) } lagrangian = dot(xi, xi) }",
    );
    assert_eq!(f.kind, FrameKind::LinearAction);
    let b = eval_bracket(&mut m, &f, XI, ETA, false);
    let d = eval_bracket(&mut m, &f, XI, ETA, true);
    let (xe, ex) = (cross(XI, ETA), cross(ETA, XI));
    for i in 0..3 {
        assert!((b[i] - xe[i]).abs() < 1e-15, "[ξ, η] = ξ × η");
        assert!((d[i] - ex[i]).abs() < 1e-15, "[ξ, μ]* = μ × ξ");
    }
}

#[test]
fn spatial_frame_on_the_sphere() {
    let (mut m, f) = bracket_of(
        "model s { coordinates { e: vec3 } velocities { w: vec3 } frame { e' = cross(w, e) } lagrangian = dot(w, w) }",
    );
    let b = eval_bracket(&mut m, &f, XI, ETA, false);
    let d = eval_bracket(&mut m, &f, XI, ETA, true);
    let (xe, ex) = (cross(XI, ETA), cross(ETA, XI));
    for i in 0..3 {
        assert!((b[i] + xe[i]).abs() < 1e-15, "[ξ, η] = −ξ × η");
        assert!((d[i] + ex[i]).abs() < 1e-15, "[ξ, μ]* = ξ × μ");
    }
}

#[test]
fn free_rigid_body_gives_eulers_equations() {
    // Rows of R: Ṙ = R ξ̂ reads ṙ_i = r_i × ξ.
    let (mut m, f) = bracket_of(
        "model rb { parameters { i1 = 1.0, i2 = 2.0, i3 = 3.5 }
           coordinates { r1: vec3, r2: vec3, r3: vec3 } velocities { w: vec3 }
           frame { r1' = cross(r1, w), r2' = cross(r2, w), r3' = cross(r3, w) }
           lagrangian = 0.5 * (i1 * w[0]^2 + i2 * w[1]^2 + i3 * w[2]^2) }",
    );
    let mech = Mechanics::of(&mut m, &f);
    let w = [0.3, -1.2, 0.7];
    let inertia = [1.0, 2.0, 3.5];
    let values = |s: u32| match m.graph.symbol_name(s) {
        "w[0]" => w[0],
        "w[1]" => w[1],
        "w[2]" => w[2],
        "i1" => 1.0,
        "i2" => 2.0,
        "i3" => 3.5,
        _ => 0.37,
    };
    let force: Vec<f64> = mech.force.iter().map(|&e| m.graph.eval(e, &values)).collect();
    let iw = [inertia[0] * w[0], inertia[1] * w[1], inertia[2] * w[2]];
    let euler = cross(iw, w); // 𝕀 ξ̇ = 𝕀ξ × ξ
    for i in 0..3 {
        assert!((force[i] - euler[i]).abs() < 1e-14, "{force:?} vs {euler:?}");
    }
}

#[test]
fn invertible_frame_brackets() {
    // u1 = ∂x, u2 = e^x ∂y: [u1, u2] = u2, so c^2_12 = 1, c^2_21 = −1.
    let (m, f) = bracket_of(
        "model p { coordinates { x, y } velocities { a, b } frame { x' = a, y' = exp(x) * b } lagrangian = a^2 + b^2 }",
    );
    assert_eq!(f.kind, FrameKind::Invertible);
    let c = |cc: usize, a: usize, b: usize| f.c.get(cc, a, b).map_or(0.0, |e| m.graph.eval(e, &|_| 0.8));
    assert!((c(1, 0, 1) - 1.0).abs() < 1e-14);
    assert!((c(1, 1, 0) + 1.0).abs() < 1e-14);
    for (cc, a, b) in [(0, 0, 1), (0, 1, 0), (0, 0, 0), (1, 1, 1)] {
        assert!(c(cc, a, b).abs() < 1e-14);
    }
}

#[test]
fn identity_frame_has_no_brackets() {
    let (_, f) = bracket_of("model a { coordinates { th, ph } lagrangian = th'^2 + sin(th)^2 * ph'^2 }");
    assert_eq!(f.kind, FrameKind::Identity);
    assert_eq!(f.c, Default::default());
}

/// Brackets `c[c][a][b]` of a frame evaluated with every symbol given by name.
fn brackets_by_name(m: &hamel_compiler::Model, f: &Frame, values: &dyn Fn(&str) -> f64) -> Vec<Vec<Vec<f64>>> {
    let n = f.psi.first().map_or(0, |row| row.len());
    let mut out = vec![vec![vec![0.0; n]; n]; n];
    for &(a, b, c, e) in &f.c.0 {
        out[c][a][b] = m.graph.eval(e, &|s| values(m.graph.symbol_name(s)));
    }
    out
}

#[test]
fn affine_action_of_the_euclidean_plane() {
    // Spatial velocities of a point: X_vx = ∂x, X_vy = ∂y, X_om = −y ∂x + x ∂y,
    // so [X_vx, X_om] = X_vy and [X_vy, X_om] = −X_vx (theory §1.1, affine).
    let (m, f) = bracket_of(
        "model p { coordinates { x, y } velocities { vx, vy, om } frame { x' = vx - om * y, y' = vy + om * x } lagrangian = vx^2 + vy^2 + om^2 }",
    );
    assert_eq!(f.kind, FrameKind::AffineAction);
    let c = brackets_by_name(&m, &f, &|_| 0.7);
    let mut want = vec![vec![vec![0.0; 3]; 3]; 3];
    (want[1][0][2], want[1][2][0]) = (1.0, -1.0);
    (want[0][1][2], want[0][2][1]) = (-1.0, 1.0);
    assert_eq!(c, want);
}

#[test]
fn cart_with_a_director_pendulum_is_an_affine_action() {
    // Once refused as square and singular everywhere: translations commute
    // with everything, the rod's angular velocities bracket as −w × w'.
    let (mut m, f) = bracket_of(
        "model c { coordinates { x, y, e: vec3 } velocities { vx, vy, w: vec3 }
           frame { x' = vx, y' = vy, e' = cross(w, e) } lagrangian = vx^2 + vy^2 + dot(w, w) }",
    );
    assert_eq!(f.kind, FrameKind::AffineAction);
    let xi = [0.0, 0.0, XI[0], XI[1], XI[2]];
    let eta = [0.3, -0.4, ETA[0], ETA[1], ETA[2]];
    let a: Vec<Id> = xi.iter().map(|&x| m.graph.constant(x)).collect();
    let b: Vec<Id> = eta.iter().map(|&x| m.graph.constant(x)).collect();
    let br: Vec<f64> = f
        .bracket(&mut m.graph, &a, &b)
        .iter()
        .map(|&e| m.graph.eval(e, &|_| 0.4))
        .collect();
    let xe = cross(XI, ETA);
    assert_eq!(br[..2], [0.0, 0.0]);
    for i in 0..3 {
        assert!((br[2 + i] + xe[i]).abs() < 1e-15, "{br:?}");
    }
}

#[test]
fn product_of_an_invertible_block_and_a_linear_action() {
    // A planar body in SE(2) angles and, apart from it, a director pendulum:
    // no rule fits the whole (not affine in th, square but singular), each
    // block fits its own, and the brackets are each block's alone.
    let se2 = "frame { x' = cos(th) * u - sin(th) * v, y' = sin(th) * u + cos(th) * v, th' = om";
    let (m, f) = bracket_of(&format!(
        "model b {{ coordinates {{ x, y, th, e: vec3 }} velocities {{ u, v, om, w: vec3 }}
           {se2}, e' = cross(w, e) }} lagrangian = u^2 + v^2 + om^2 + dot(w, w) }}"
    ));
    assert_eq!(f.kind, FrameKind::Product);
    let kinds: Vec<(Vec<usize>, Vec<usize>, FrameKind)> = f
        .blocks
        .iter()
        .map(|b| (b.coordinates.clone(), b.velocities.clone(), b.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (vec![0, 1, 2], vec![0, 1, 2], FrameKind::Invertible),
            (vec![3, 4, 5], vec![3, 4, 5], FrameKind::LinearAction)
        ]
    );
    let (m1, f1) = bracket_of(&format!(
        "model s {{ coordinates {{ x, y, th }} velocities {{ u, v, om }} {se2} }} lagrangian = u^2 + v^2 + om^2 }}"
    ));
    let (m2, f2) = bracket_of(
        "model d { coordinates { e: vec3 } velocities { w: vec3 } frame { e' = cross(w, e) } lagrangian = dot(w, w) }",
    );
    let values = |s: &str| if s == "th" { 0.9 } else { 0.4 };
    let (c, c1, c2) = (
        brackets_by_name(&m, &f, &values),
        brackets_by_name(&m1, &f1, &values),
        brackets_by_name(&m2, &f2, &values),
    );
    for cc in 0..6 {
        for a in 0..6 {
            for b in 0..6 {
                let want = match (cc / 3, a / 3, b / 3) {
                    (0, 0, 0) => c1[cc][a][b],
                    (1, 1, 1) => c2[cc - 3][a - 3][b - 3],
                    _ => 0.0,
                };
                assert_eq!(c[cc][a][b], want, "c[{cc}][{a}][{b}]");
            }
        }
    }
}

#[test]
fn a_block_no_rule_fits_is_named() {
    let mut m = hamel_compiler::load(
        "t.hamel",
        "model t { coordinates { x, G: vec3 } velocities { vx, W: vec3 }
           frame { x' = vx, G' = norm(G) * cross(G, W) } lagrangian = vx^2 + dot(W, W) }",
    )
    .unwrap();
    let e = Frame::of(&mut m).unwrap_err().0;
    for want in [
        "the block of coordinates G[0], G[1], G[2] with velocities W[0], W[1], W[2] fits none of the rules",
        "is not affine in the coordinates",
        "singular at every sampled configuration",
        "write rotations as cross products",
    ] {
        assert!(e.contains(want), "expected `{want}` in: {e}");
    }
}
