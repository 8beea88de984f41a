//! The kernel's BTF (`/sys/kernel/btf/vmlinux`, Linux 5.4 with `CONFIG_DEBUG_INFO_BTF`), read
//! for one fact: the type id of a kernel function, which a tracing program names at load to be
//! attached at its entry. The format is the kernel's Documentation/bpf/btf.rst: a header, then
//! the types (each a `struct btf_type` of 12 bytes and the data its kind adds), then the
//! names; type ids count the types from 1.

/// The kernel's BTF (`kernel/btf/vmlinux` under sysfs).
pub fn vmlinux() -> std::path::PathBuf {
    counterhal_system::System::host().sys_file("kernel/btf/vmlinux")
}

/// `BTF_MAGIC`, in the machine's byte order.
const MAGIC: u16 = 0xeb9f;
/// `BTF_KIND_TYPEDEF`.
#[cfg_attr(not(test), allow(dead_code))]
pub const KIND_TYPEDEF: u32 = 8;
/// `BTF_KIND_FUNC`.
pub const KIND_FUNC: u32 = 12;

/// The bytes a type of `kind` with `vlen` members adds after its `struct btf_type`
/// (Documentation/bpf/btf.rst, "Type Encoding"); `None` for a kind this reader does not know.
fn extra_bytes(kind: u32, vlen: usize) -> Option<usize> {
    Some(match kind {
        // INT, VAR, DECL_TAG: one u32.
        1 | 14 | 17 => 4,
        // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG: none.
        2 | 7..=12 | 16 | 18 => 0,
        // ARRAY: struct btf_array.
        3 => 12,
        // STRUCT, UNION (struct btf_member), DATASEC (struct btf_var_secinfo), ENUM64.
        4 | 5 | 15 | 19 => 12 * vlen,
        // ENUM (struct btf_enum), FUNC_PROTO (struct btf_param).
        6 | 13 => 8 * vlen,
        _ => return None,
    })
}

/// The id of the function `name` in the BTF `btf`.
///
/// # Errors
/// Why it was not found, in words: not BTF, cut short, a kind this reader does not know, or
/// no such function.
pub fn function_id(btf: &[u8], name: &str) -> Result<u32, String> {
    type_id(btf, KIND_FUNC, name)
}

/// The id of the type of kind `wanted` (a `BTF_KIND_*`) named `name` in the BTF `btf`.
///
/// # Errors
/// As [`function_id`].
pub fn type_id(btf: &[u8], wanted: u32, name: &str) -> Result<u32, String> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(
            btf.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let magic = btf.get(0..2).map(|m| u16::from_ne_bytes([m[0], m[1]]));
    if magic != Some(MAGIC) {
        return Err("it is not BTF (no magic 0xeb9f)".to_string());
    }
    let short = || "it is cut short".to_string();
    let header = word(4).ok_or_else(short)? as usize;
    let field = |at: usize| word(at).map(|w| w as usize).ok_or_else(short);
    let (types, types_len) = (header.saturating_add(field(8)?), field(12)?);
    let (names, names_len) = (header.saturating_add(field(16)?), field(20)?);
    let name_at = |offset: usize| -> Option<&[u8]> {
        let rest = btf.get(names.checked_add(offset)?..names.checked_add(names_len)?)?;
        rest.split(|&b| b == 0).next()
    };
    let end = types.checked_add(types_len).filter(|&e| e <= btf.len());
    let end = end.ok_or_else(short)?;
    let (mut at, mut id) = (types, 1u32);
    while at < end {
        let (name_off, info) = (field(at)?, word(at + 4).ok_or_else(short)?);
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        if kind == wanted && name_at(name_off) == Some(name.as_bytes()) {
            return Ok(id);
        }
        let extra = extra_bytes(kind, vlen)
            .ok_or_else(|| format!("type {id} is of kind {kind}, unknown"))?;
        at += 12 + extra;
        id += 1;
    }
    Err(format!(
        "it has no {} {name}",
        match wanted {
            KIND_FUNC => "function",
            _ => "type",
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF of `types` (each its `struct btf_type` words and extra bytes) and `names`.
    fn btf(types: &[u8], names: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(MAGIC.to_ne_bytes());
        out.extend([1, 0]);
        for word in [
            24,
            0,
            types.len() as u32,
            types.len() as u32,
            names.len() as u32,
        ] {
            out.extend(word.to_ne_bytes());
        }
        out.extend(types);
        out.extend(names);
        out
    }

    fn btf_type(name_off: u32, kind: u32, vlen: u32, extra: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for word in [name_off, (kind << 24) | vlen, 0] {
            out.extend(word.to_ne_bytes());
        }
        out.extend(vec![0; extra]);
        out
    }

    /// Oracle: Documentation/bpf/btf.rst's encoding, written by hand here (a struct of two
    /// members, a prototype of one parameter, then the function), and the system's own BTF
    /// where it has one (the function `cgroup_migrate` of kernel/cgroup/cgroup.c).
    #[test]
    fn a_function_is_found_past_types_of_every_size() {
        let names = b"\0point\0migrate\0other\0";
        let mut types = btf_type(1, 4, 2, 24);
        types.extend(btf_type(0, 13, 1, 8));
        types.extend(btf_type(15, 12, 0, 0));
        types.extend(btf_type(7, 12, 0, 0));
        let data = btf(&types, names);
        assert_eq!(function_id(&data, "migrate"), Ok(4));
        assert_eq!(function_id(&data, "other"), Ok(3));
        assert!(
            function_id(&data, "point")
                .unwrap_err()
                .contains("no function")
        );
        // Cut anywhere, it is an error, never a panic.
        for len in 0..data.len() {
            let _ = function_id(&data[..len], "migrate");
        }
        let unknown = btf(&btf_type(1, 31, 0, 0), names);
        assert!(
            function_id(&unknown, "migrate")
                .unwrap_err()
                .contains("kind 31")
        );
        if let Ok(vmlinux) = std::fs::read(vmlinux()) {
            let id = function_id(&vmlinux, "cgroup_migrate");
            assert!(id.as_ref().is_ok_and(|&id| id > 1), "{id:?}");
        }
    }
}
