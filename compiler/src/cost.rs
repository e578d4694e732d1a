//! What a derivation will cost before it runs. Chains grow steeply with
//! their size (the director chain's derivation as N^3.3), and a size the
//! machine cannot handle in reasonable time must be refused at once, with
//! the estimate that refused it, rather than run for hours in silence.
//!
//! The estimate is measured, not modelled: the model is derived at two small
//! sizes and the time extrapolated as a power of the size.

use std::time::Instant;

use crate::scheme::Scheme;

/// Sizes at or below this derive without an estimate (a few seconds at
/// most); above it, the model is derived at half this size and at this size
/// to measure the growth. (The director chain's exponent itself grows with
/// N, 2.6 between 4 and 8, 3.1 between 8 and 16, 3.5 between 16 and 20:
/// probes this large keep the extrapolation from flattering big sizes.)
pub const PROBE_ABOVE: i64 = 16;

/// Derivations estimated above this many seconds are refused unless the
/// environment variable `HAMEL_MAX_DERIVE_SECONDS` allows more.
pub const DEFAULT_LIMIT_SECONDS: f64 = 600.0;

/// An extrapolated derivation time.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// the size that was extrapolated (`N`) and its requested value
    pub size: (String, i64),
    /// the two probes: size value and seconds of derivation
    pub probes: [(i64, f64); 2],
    /// the fitted exponent: time ∝ size^exponent
    pub exponent: f64,
    /// the estimated seconds at the requested size
    pub seconds: f64,
}

impl std::fmt::Display for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, v) = &self.size;
        write!(
            f,
            "about {} at {n} = {v} (measured {:.2} s at {n} = {} and {:.2} s at {n} = {}: time ∝ {n}^{:.1})",
            human(self.seconds),
            self.probes[0].1,
            self.probes[0].0,
            self.probes[1].1,
            self.probes[1].0,
            self.exponent
        )
    }
}

fn human(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 2.0 * 86400.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

/// The limit in seconds: `HAMEL_MAX_DERIVE_SECONDS` if set to a positive
/// number, else [`DEFAULT_LIMIT_SECONDS`].
pub fn limit_seconds() -> f64 {
    std::env::var("HAMEL_MAX_DERIVE_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(DEFAULT_LIMIT_SECONDS)
}

/// The estimated time to derive the default scheme (or the first that
/// applies) for the model `src` at `sizes`, when a size exceeds
/// [`PROBE_ABOVE`]; `None` when none does, or when the small sizes do not
/// derive (the real derivation then reports why).
pub fn estimate(file: &str, src: &str, sizes: &[(String, i64)]) -> Option<Estimate> {
    let (name, value) = sizes.iter().filter(|(_, v)| *v > PROBE_ABOVE).max_by_key(|(_, v)| *v)?;
    let at = |v: i64| -> Option<f64> {
        let probe: Vec<(String, i64)> = sizes
            .iter()
            .map(|(n, x)| (n.clone(), if n == name { v } else { (*x).min(PROBE_ABOVE) }))
            .collect();
        let model = crate::model::load_with_sizes(file, src, &probe).ok()?;
        let scheme = std::iter::once(Scheme::DEFAULT)
            .chain(Scheme::LIST)
            .find(|s| s.applies(&model).is_ok())?;
        let started = Instant::now();
        // The dense step, as if no tableau were kept: `Auto` would switch
        // between the probes (8 links dense, 16 sparse) and measure no
        // growth. A kept tableau makes the step linear, but the parts of
        // the derivation that stay dense (the observation of the velocity,
        // the invariants) then dominate large sizes, and two small probes
        // cannot see them; the dense step's growth is the safe bound.
        scheme
            .derive_with(&model, crate::scheme::TableauChoice::Substitute)
            .ok()?;
        Some(started.elapsed().as_secs_f64().max(1e-4))
    };
    let (lo, hi) = (PROBE_ABOVE / 2, PROBE_ABOVE);
    let (t_lo, t_hi) = (at(lo)?, at(hi)?);
    // Between linear and sixth power: timer noise on tiny probes must not
    // give an absurd exponent either way.
    let exponent = ((t_hi / t_lo).ln() / 2f64.ln()).clamp(1.0, 6.0);
    Some(Estimate {
        size: (name.clone(), *value),
        probes: [(lo, t_lo), (hi, t_hi)],
        exponent,
        seconds: t_hi * (*value as f64 / hi as f64).powf(exponent),
    })
}

/// Refuses sizes whose derivation is estimated beyond [`limit_seconds`];
/// returns the estimate otherwise (for a progress note), `None` for small
/// sizes.
pub fn check(file: &str, src: &str, sizes: &[(String, i64)]) -> Result<Option<Estimate>, String> {
    let Some(e) = estimate(file, src, sizes) else {
        return Ok(None);
    };
    let limit = limit_seconds();
    if e.seconds > limit {
        return Err(format!(
            "{file}: deriving the model would take {e}, more than the limit of {} (set HAMEL_MAX_DERIVE_SECONDS to allow more); \
             choose a smaller size, or the maximal-coordinate form of a chain, whose derivation grows slowly",
            human(limit)
        ));
    }
    Ok(Some(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: &str = include_str!("../../models/spherical_chain.hamel");

    #[test]
    fn small_sizes_are_not_probed() {
        assert_eq!(estimate("chain", CHAIN, &[("N".into(), PROBE_ABOVE)]), None);
        assert_eq!(estimate("chain", CHAIN, &[]), None);
    }

    #[test]
    fn the_estimate_reads_as_a_sentence() {
        let e = Estimate {
            size: ("N".into(), 200),
            probes: [(8, 0.2), (16, 1.8)],
            exponent: 3.2,
            seconds: 5100.0,
        };
        assert_eq!(
            e.to_string(),
            "about 85 min at N = 200 (measured 0.20 s at N = 8 and 1.80 s at N = 16: time ∝ N^3.2)"
        );
    }
}
