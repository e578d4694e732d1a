//! Long expressions never overflow the stack (hostile campaign, finding 1):
//! long `+ -` and `* /` chains are balanced by the parser; what still nests
//! (`^`, unary `-`, calls) is refused past a depth limit with its place.
//! The tests run on the test harness's 2 MiB threads, in debug builds too.

use hamel_compiler::MAX_EXPR_DEPTH;

fn pendulum_with(extra: &str) -> String {
    format!(
        "model pend {{\n parameters {{ m = 1.0, g = 9.81 }}\n coordinates {{ th }}\n lagrangian = 0.5 * m * th'^2 + m * g * cos(th){extra}\n initial r {{ th = 0.1, th' = 0 }}\n}}\n"
    )
}

#[test]
fn a_chain_of_14000_sums_loads_and_derives() {
    // 14 000 `+ th` overflowed the stack of every host before
    let m = hamel_compiler::load("long.hamel", &pendulum_with(&" + th".repeat(14_000))).unwrap();
    assert_eq!(m.coords.len(), 1);
    // mixed signs and products, with distinct terms
    let mixed: String = (1..4000)
        .map(|i| format!(" {} 1e-9 * th * {i} / {}", if i % 3 == 0 { "-" } else { "+" }, i + 1))
        .collect();
    let m = hamel_compiler::load("mixed.hamel", &pendulum_with(&mixed)).unwrap();
    // the sum is exact: sum over i of ±i/(i+1) · 1e-9, times th
    let want: f64 = (1..4000)
        .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 } * 1e-9 * i as f64 / (i + 1) as f64)
        .sum();
    let l = m.lagrangian;
    let mut g = m.graph.clone();
    let th = m.coords[0].sym;
    let d = hamel_compiler::sym::diff::gradient(&mut g, l, &[th])[0];
    let got = g.eval(d, &|_| 0.0);
    // dL/dth at th = 0 is the linear coefficient (the cosine's derivative is 0)
    assert!((got - want).abs() < 1e-15, "{got} vs {want}");
}

#[test]
fn a_long_product_or_quotient_chain_loads() {
    let prod = " * 1.0001 / 1.0001 * th".repeat(3000);
    hamel_compiler::load("prod.hamel", &pendulum_with(&format!(" + 1e-9{prod}"))).unwrap();
    let quot = " / 1.0001".repeat(6000);
    hamel_compiler::load("quot.hamel", &pendulum_with(&format!(" + th{quot}"))).unwrap();
}

#[test]
fn deep_nesting_is_refused_with_its_place() {
    for (what, extra) in [
        ("powers", format!(" + th{}", "^th".repeat(3000))),
        ("negations", format!(" + {}th", "- ".repeat(3000))),
        ("mixed", format!(" + th{}", "^-th'".repeat(2000))),
    ] {
        let e = hamel_compiler::load("deep.hamel", &pendulum_with(&extra)).unwrap_err();
        let d = &e.0[0];
        let msg = d.to_string();
        assert!(
            d.message
                .contains(&format!("more than the limit {MAX_EXPR_DEPTH}; split it with `let`")),
            "{what}: {msg}"
        );
        assert!(msg.contains("--> deep.hamel:4:"), "{what}: {msg}");
    }
    // just under the limit is fine
    hamel_compiler::load(
        "ok.hamel",
        &pendulum_with(&format!(" + 1e-9 * th{}", "^1".repeat(MAX_EXPR_DEPTH - 10))),
    )
    .unwrap();
}
