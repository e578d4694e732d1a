//! Machine code as bytes and back, so that a later process on the same
//! machine can skip compilation (hosts keep it in a cache file).
//!
//! Bytes read back are executed, so everything is checked before use: a
//! checksum over the whole record, the instruction set it was compiled for,
//! the number of functions, and that every relocation lies inside its
//! function's code and names a function that exists.

use cranelift_codegen::binemit::Reloc;
use cranelift_codegen::isa::TargetIsa;
use cranelift_module::{FuncId, ModuleReloc, ModuleRelocTarget};

use hamel_kernel::hash::{fnv1a, FNV_OFFSET};

use crate::codegen::Compiled;
use crate::JitError;

const MAGIC: &[u8; 8] = b"HAMELJC1";

/// The relocations compiled programs use on the hosts we build for; code
/// with any other is compiled every time rather than kept.
const RELOCS: [Reloc; 6] = [
    Reloc::Abs4,
    Reloc::Abs8,
    Reloc::X86PCRel4,
    Reloc::X86CallPCRel4,
    Reloc::X86CallPLTRel4,
    Reloc::Arm64Call,
];

/// Bytes a relocation of this kind writes.
fn reloc_width(kind: Reloc) -> u64 {
    match kind {
        Reloc::Abs8 => 8,
        _ => 4,
    }
}

/// What the code was compiled for: target triple and every setting.
pub(crate) fn isa_tag(isa: &dyn TargetIsa) -> String {
    let isa_flags: Vec<String> = isa.isa_flags().iter().map(ToString::to_string).collect();
    format!("{} {} {}", isa.triple(), isa_flags.join(","), isa.flags())
}

/// `code` as bytes, or `None` if a relocation is of a kind not kept.
pub(crate) fn write(isa: &dyn TargetIsa, code: &[Compiled]) -> Option<Vec<u8>> {
    let mut w = MAGIC.to_vec();
    let tag = isa_tag(isa);
    let put = |w: &mut Vec<u8>, x: u64| w.extend_from_slice(&x.to_le_bytes());
    put(&mut w, tag.len() as u64);
    w.extend_from_slice(tag.as_bytes());
    put(&mut w, code.len() as u64);
    for c in code {
        put(&mut w, c.alignment);
        put(&mut w, c.bytes.len() as u64);
        w.extend_from_slice(&c.bytes);
        put(&mut w, c.relocs.len() as u64);
        for r in &c.relocs {
            let kind = RELOCS.iter().position(|&k| k == r.kind)?;
            let (tag, a, b) = match r.name {
                ModuleRelocTarget::User { namespace, index } => (0, namespace, index),
                ModuleRelocTarget::FunctionOffset(id, offset) => (1, id.as_u32(), offset),
                _ => return None,
            };
            put(&mut w, u64::from(r.offset));
            put(&mut w, kind as u64);
            put(&mut w, tag);
            put(&mut w, u64::from(a));
            put(&mut w, u64::from(b));
            put(&mut w, r.addend as u64);
        }
    }
    let sum = fnv1a(FNV_OFFSET, &w);
    put(&mut w, sum);
    Some(w)
}

/// Code written by [`write`] for this instruction set, `functions` functions
/// calling only functions `0..declared`; an error for anything else.
pub(crate) fn read(
    isa: &dyn TargetIsa,
    bytes: &[u8],
    functions: usize,
    declared: u32,
) -> Result<Vec<Compiled>, JitError> {
    let bad = |what: &str| JitError(format!("kept machine code: {what}"));
    let (body, sum) = bytes
        .split_at_checked(bytes.len().saturating_sub(8))
        .ok_or_else(|| bad("cut short"))?;
    if sum.len() != 8 || fnv1a(FNV_OFFSET, body).to_le_bytes() != sum {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader { body, at: 0 };
    if r.take(8)? != MAGIC {
        return Err(bad("not hamel machine code"));
    }
    let n = r.num()?;
    if r.take(n)? != isa_tag(isa).as_bytes() {
        return Err(bad("compiled for another instruction set or settings"));
    }
    if r.num()? != functions as u64 {
        return Err(bad("another number of functions"));
    }
    let mut code = Vec::with_capacity(functions);
    for _ in 0..functions {
        let alignment = r.num()?;
        if !alignment.is_power_of_two() || alignment > 4096 {
            return Err(bad("alignment"));
        }
        let len = r.num()?;
        let bytes = r.take(len)?.to_vec();
        let relocs = r.num()?;
        if relocs > len {
            return Err(bad("relocations"));
        }
        let mut kept = Vec::with_capacity(relocs as usize);
        for _ in 0..relocs {
            let offset = r.num()?;
            let kind = *RELOCS.get(r.num()? as usize).ok_or_else(|| bad("relocation kind"))?;
            if offset.checked_add(reloc_width(kind)).is_none_or(|end| end > len) {
                return Err(bad("relocation outside its function"));
            }
            let (tag, a, b) = (r.num()?, r.num()?, r.num()?);
            let (a, b) = (
                u32::try_from(a).map_err(|_| bad("target"))?,
                u32::try_from(b).map_err(|_| bad("target"))?,
            );
            let name = match tag {
                0 if a == 0 && b < declared => ModuleRelocTarget::User { namespace: a, index: b },
                1 if a < declared => ModuleRelocTarget::FunctionOffset(FuncId::from_u32(a), b),
                _ => return Err(bad("relocation target")),
            };
            let addend = r.num()? as i64;
            kept.push(ModuleReloc {
                offset: offset as u32,
                kind,
                name,
                addend,
            });
        }
        code.push(Compiled {
            bytes,
            alignment,
            relocs: kept,
        });
    }
    if r.at != body.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(code)
}

struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: u64) -> Result<&[u8], JitError> {
        let cut = || JitError("kept machine code: cut short".into());
        let n = usize::try_from(n).map_err(|_| cut())?;
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.body.len())
            .ok_or_else(cut)?;
        let s = &self.body[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn num(&mut self) -> Result<u64, JitError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
}
