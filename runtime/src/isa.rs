//! Which instruction-set copy of a derived kernel runs.
//!
//! The derive emits the longer per-step kernels three times — baseline
//! x86-64, AVX2, AVX-512 — with the same arithmetic (no fused multiply–adds),
//! so every copy gives the same bits. By default each call runs the widest
//! copy the processor has. A **ceiling** lowers that choice for the whole
//! process, so that tests (and measurements) can run every copy on one machine:
//!
//! - the environment variable `HAMEL_ISA=baseline|avx2|avx512`, read once, at
//!   the first call of a derived kernel with copies (or of [`ceiling`]);
//! - [`set_ceiling`], which overrides it from then on.
//!
//! A ceiling never makes a copy run on a processor without its features: the
//! derived code checks the features itself, and falls back to the next
//! narrower copy (down to the baseline) when the ceiling names one the
//! processor lacks. [`selected`] says which copy runs; in builds with debug
//! assertions (tests) [`last_run`] says which copy the last call ran.
//!
//! Derives with `simd = false`, kernels too short to get copies, and the
//! run-time back-ends (JIT, interpreter) do not read the ceiling.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level of the derived copies, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// x86-64's baseline (SSE2), and every other architecture
    Baseline,
    /// AVX2
    Avx2,
    /// AVX-512 (F and VL); emitted only by derives built with Rust 1.89 or later
    Avx512,
}

impl Isa {
    /// Every level, narrowest first.
    pub const ALL: [Isa; 3] = [Isa::Baseline, Isa::Avx2, Isa::Avx512];

    /// The name `HAMEL_ISA` accepts: `baseline`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Baseline => "baseline",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The level named `name` (see [`Isa::name`]).
    pub fn from_name(name: &str) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.name() == name)
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Isa {
        Isa::ALL[usize::from(c)]
    }
}

/// Whether the processor running this process can run the copy of level `isa`.
pub fn available(isa: Isa) -> bool {
    match isa {
        Isa::Baseline => true,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => false,
    }
}

/// Not read yet; any other value is an [`Isa`] code.
const UNSET: u8 = u8::MAX;

static CEILING: AtomicU8 = AtomicU8::new(UNSET);

/// The widest copy derived kernels may run: [`set_ceiling`]'s value, else
/// `HAMEL_ISA`'s, else [`Isa::Avx512`] (no limit). An unknown `HAMEL_ISA` is
/// reported once on standard error and ignored.
#[inline]
pub fn ceiling() -> Isa {
    match CEILING.load(Ordering::Relaxed) {
        UNSET => ceiling_from_env(),
        c => Isa::from_code(c),
    }
}

#[cold]
fn ceiling_from_env() -> Isa {
    let isa = match std::env::var("HAMEL_ISA") {
        Ok(name) => Isa::from_name(name.trim()).unwrap_or_else(|| {
            eprintln!("hamel: ignoring HAMEL_ISA={name:?} (expected baseline, avx2 or avx512)");
            Isa::Avx512
        }),
        Err(_) => Isa::Avx512,
    };
    // A concurrent `set_ceiling` wins over the environment.
    match CEILING.compare_exchange(UNSET, isa.code(), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => isa,
        Err(c) => Isa::from_code(c),
    }
}

/// Sets the ceiling for the whole process (every thread, every derived
/// model), overriding `HAMEL_ISA`; returns the copy that now runs
/// ([`selected`]). Kernels already running finish in the copy they started.
pub fn set_ceiling(isa: Isa) -> Isa {
    CEILING.store(isa.code(), Ordering::Relaxed);
    selected()
}

/// The copy derived kernels with copies run now: the widest level up to the
/// [`ceiling`] that the processor has ([`available`]). A derive without an
/// AVX-512 copy (see the README's `simd` attribute) runs its AVX2 copy where
/// this says [`Isa::Avx512`].
pub fn selected() -> Isa {
    let top = ceiling();
    Isa::ALL
        .into_iter()
        .rev()
        .find(|&isa| isa <= top && available(isa))
        .unwrap_or(Isa::Baseline)
}

/// The copy the last derived kernel with copies ran, `UNSET` before any.
static LAST: AtomicU8 = AtomicU8::new(UNSET);

/// Records that a derived kernel ran its `isa` copy. Called by derived
/// dispatchers in builds with debug assertions only (tests), so that
/// [`last_run`] can say which copy ran; not part of the API.
#[doc(hidden)]
#[inline]
pub fn record(isa: Isa) {
    LAST.store(isa.code(), Ordering::Relaxed);
}

/// The copy the last derived kernel with copies ran, in crates built with
/// debug assertions (as tests are); `None` before any such call, and always
/// in builds without debug assertions, where the dispatch records nothing.
pub fn last_run() -> Option<Isa> {
    match LAST.load(Ordering::Relaxed) {
        UNSET => None,
        c => Some(Isa::from_code(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_is_by_width() {
        for isa in Isa::ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
            assert_eq!(Isa::from_code(isa.code()), isa);
        }
        assert_eq!(Isa::from_name("sse2"), None);
        assert!(Isa::Baseline < Isa::Avx2 && Isa::Avx2 < Isa::Avx512);
    }

    #[test]
    fn the_ceiling_caps_the_choice_and_never_exceeds_the_processor() {
        // The only test here that sets the ceiling: it is process-wide.
        for isa in Isa::ALL {
            let got = set_ceiling(isa);
            assert_eq!(ceiling(), isa);
            assert!(got <= isa && available(got), "{isa:?} gave {got:?}");
            if available(isa) {
                assert_eq!(got, isa);
            }
        }
        assert!(available(Isa::Baseline));
        assert_eq!(set_ceiling(Isa::Baseline), Isa::Baseline);
    }
}
