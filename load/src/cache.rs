//! Derivations and native code kept between runs, so that running a model
//! again (another step size, other parameters, another host) costs only its
//! steps: the derived step is read back instead of derived, the JIT's
//! machine code loaded instead of compiled.
//!
//! An entry is keyed by the model's source and sizes
//! ([`Model::source_hash`]), the scheme, and the build of hamel that wrote it
//! (a hash of its sources and locked dependencies), so that a changed model
//! or a new hamel never reads an old entry. Machine code also records the
//! instruction set and settings it was compiled for and a checksum, and is
//! refused when either differs. Entries are written whole (to a temporary
//! file, then renamed), so concurrent runs never read half an entry; an entry
//! that cannot be read is derived again and replaced. Parameters are not part
//! of the key: they are arguments of the derived functions.

use std::path::{Path, PathBuf};

use hamel_compiler::emit::compiled::CompiledStep;
use hamel_compiler::scheme::Scheme;
use hamel_compiler::Model;
use hamel_kernel::hash::{fnv1a, FNV_OFFSET};

/// The hash of the build that writes and reads entries (see `build.rs`).
const BUILD: &str = env!("HAMEL_BUILD");

/// A folder of kept derivations and machine code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    dir: PathBuf,
}

/// One model derived with one scheme: the names of its entries.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    step: PathBuf,
    code: PathBuf,
}

impl Cache {
    /// A cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The cache hosts use unless told otherwise: `HAMEL_CACHE_DIR` if set,
    /// else `$XDG_CACHE_HOME/hamel`, else `~/.cache/hamel`; none if
    /// `HAMEL_CACHE` is `off` (or `0`, `no`, `false`) or no home is known.
    pub fn from_env() -> Option<Cache> {
        if std::env::var("HAMEL_CACHE").is_ok_and(|v| ["off", "0", "no", "false"].contains(&v.to_lowercase().as_str()))
        {
            return None;
        }
        let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(dir) = non_empty("HAMEL_CACHE_DIR") {
            return Some(Cache::at(dir));
        }
        let base = non_empty("XDG_CACHE_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".cache")))?;
        Some(Cache::at(base.join("hamel")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entries of `model` derived with `scheme` (with the step map's
    /// sensitivity if `sensitivity`).
    pub(crate) fn entry(&self, model: &Model, scheme: Scheme, sensitivity: bool) -> Entry {
        let mut h = fnv1a(FNV_OFFSET, BUILD.as_bytes());
        h = fnv1a(h, &model.source_hash.to_le_bytes());
        h = fnv1a(h, scheme.name().as_bytes());
        h = fnv1a(h, &[u8::from(sensitivity)]);
        let stem = format!("{}-{h:016x}", safe_name(&model.name));
        Entry {
            step: self.dir.join(format!("{stem}.step")),
            code: self.dir.join(format!("{stem}.code")),
        }
    }

    /// Whether a derivation of `model` (at its sizes, by this build, with
    /// any scheme) is kept here.
    pub fn holds(&self, model: &Model) -> bool {
        Scheme::LIST.iter().any(|&s| {
            [false, true]
                .iter()
                .any(|&sens| self.entry(model, s, sens).step.is_file())
        })
    }

    /// Whether the derivation of `model` with `scheme` (at its sizes, by
    /// this build) that [`crate::compile_cached`] reads is kept here.
    pub fn holds_scheme(&self, model: &Model, scheme: Scheme) -> bool {
        self.entry(model, scheme, false).step.is_file()
    }

    /// The derived step kept in `entry`, if there is one this build can read.
    pub(crate) fn step(&self, entry: &Entry) -> Option<CompiledStep> {
        CompiledStep::from_bytes(&std::fs::read(&entry.step).ok()?).ok()
    }

    /// Keeps `step` in `entry` (best effort: a cache that cannot be written
    /// costs the next run its derivation, nothing else).
    pub(crate) fn keep_step(&self, entry: &Entry, step: &CompiledStep) {
        self.write(&entry.step, &step.to_bytes());
    }

    /// The machine code kept in `entry` (the JIT checks it), unless others
    /// than its owner may write the folder or the file: the code is
    /// executed, and a checksum guards against damage, not against a
    /// planted file. Such a folder still keeps derivations (data only).
    pub(crate) fn code(&self, entry: &Entry) -> Option<Vec<u8>> {
        if !private(&self.dir) || !private(&entry.code) {
            return None;
        }
        std::fs::read(&entry.code).ok()
    }

    /// Keeps machine code in `entry` (best effort, as [`Cache::keep_step`]).
    pub(crate) fn keep_code(&self, entry: &Entry, bytes: &[u8]) {
        self.write(&entry.code, bytes);
    }

    fn write(&self, path: &Path, bytes: &[u8]) {
        if !self.dir.exists() {
            if std::fs::create_dir_all(&self.dir).is_err() {
                return;
            }
            // A folder this process made is its owner's alone (see `code`).
            restrict(&self.dir, 0o700);
        }
        // A name no other process uses, renamed over the entry when whole.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() && restrict(&tmp, 0o600) && std::fs::rename(&tmp, path).is_ok() {
            self.trim(MAX_BYTES);
            return;
        }
        let _ = std::fs::remove_file(&tmp);
    }

    /// Keeps the folder under `max` bytes ([`MAX_BYTES`]): past it, the
    /// entries written longest ago go, down to three quarters of it (each
    /// build of hamel writes its own entries, so without this a developer's
    /// folder would only grow). Files that are not entries stay.
    fn trim(&self, max: u64) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else { return };
        let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = dir
            .filter_map(|e| {
                let e = e.ok()?;
                let m = e.metadata().ok()?;
                let ours = matches!(e.path().extension()?.to_str()?, "step" | "code");
                (ours && m.is_file()).then_some(())?;
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        if total <= max {
            return;
        }
        files.sort();
        for (_, len, path) in files {
            if total <= max / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }
}

/// The most the cache folder holds before its oldest entries are removed.
const MAX_BYTES: u64 = 512 << 20;

/// Whether only its owner may write `path` (on Unix: no group or other
/// write bit; elsewhere: always).
fn private(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o022 == 0)
    }
    #[cfg(not(unix))]
    {
        path.exists()
    }
}

/// Sets `path`'s permissions to `mode` on Unix; true elsewhere.
fn restrict(path: &Path, mode: u32) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).is_ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        true
    }
}

/// The model's name as a file-name prefix (letters, digits, `_`), so that a
/// person looking in the folder sees which model an entry is.
fn safe_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(48)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_size_the_folder_loses_its_oldest_entries_only() {
        let dir = std::env::temp_dir().join(format!("hamel-cache-trim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cache = Cache::at(&dir);
        // Ten entries of 100 bytes written in order, and a file not ours.
        for k in 0..10 {
            let ext = if k % 2 == 0 { "step" } else { "code" };
            std::fs::write(dir.join(format!("m-{k}.{ext}")), [0u8; 100]).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::write(dir.join("notes.txt"), [0u8; 5000]).unwrap();
        cache.trim(2000);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            11,
            "under the size: nothing goes"
        );
        cache.trim(800);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        // Down to 600 bytes: the six entries written last, and the other file.
        assert_eq!(
            left,
            [
                "m-4.step",
                "m-5.code",
                "m-6.step",
                "m-7.code",
                "m-8.step",
                "m-9.code",
                "notes.txt"
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn machine_code_in_a_folder_others_may_write_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("hamel-cache-shared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let set = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        set(&dir, 0o755);
        let cache = Cache::at(&dir);
        let entry = Entry {
            step: dir.join("m.step"),
            code: dir.join("m.code"),
        };
        cache.keep_code(&entry, b"code");
        set(&entry.code, 0o644);
        assert_eq!(cache.code(&entry).as_deref(), Some(&b"code"[..]));
        set(&dir, 0o777);
        assert_eq!(cache.code(&entry), None, "a folder anyone may write");
        set(&dir, 0o755);
        set(&entry.code, 0o664);
        assert_eq!(cache.code(&entry), None, "a file its group may write");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
