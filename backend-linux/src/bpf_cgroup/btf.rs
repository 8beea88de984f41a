//! The kernel's BTF (`/sys/kernel/btf/vmlinux`, Linux 5.4 with `CONFIG_DEBUG_INFO_BTF`), read
//! for one fact: the type id of a kernel function, which a tracing program names at load to be
//! attached at its entry. The format is the kernel's Documentation/bpf/btf.rst: a header, then
//! the types (each a `struct btf_type` of 12 bytes and the data its kind adds), then the
//! names; type ids count the types from 1.

/// Where `system`'s kernel BTF is (`kernel/btf/vmlinux` under its sysfs), to name it.
pub fn vmlinux(system: &counterhal_system::System) -> std::path::PathBuf {
    system.kernel_btf_path()
}

/// The kernel's BTF, as the system reads it ([`counterhal_system::System::kernel_btf`]).
///
/// # Errors
/// `NotFound` where the kernel exports none (built without `CONFIG_DEBUG_INFO_BTF`); the
/// system's refusal where the file breaks its reading rule.
pub fn read_vmlinux(system: &counterhal_system::System) -> std::io::Result<Vec<u8>> {
    match system.kernel_btf() {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(std::io::ErrorKind::NotFound.into()),
        Err(refused) => Err(std::io::Error::other(refused)),
    }
}

/// `BTF_MAGIC`, in the machine's byte order.
const MAGIC: u16 = 0xeb9f;
/// `BTF_KIND_TYPEDEF`.
#[cfg_attr(not(test), allow(dead_code))]
pub const KIND_TYPEDEF: u32 = 8;
/// `BTF_KIND_FUNC`.
pub const KIND_FUNC: u32 = 12;
/// `BTF_KIND_STRUCT`.
pub const KIND_STRUCT: u32 = 4;

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
    find(btf, wanted, name).map(|(id, _)| id)
}

/// The byte offset of member `member` in the struct `name` of the BTF `btf` (a member that
/// is no bit field).
///
/// # Errors
/// As [`function_id`], or no such member, or a bit field.
pub fn member_offset(btf: &[u8], name: &str, member: &str) -> Result<u32, String> {
    let (_, at) = find(btf, KIND_STRUCT, name)?;
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(
            btf.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let short = || "it is cut short".to_string();
    let header = word(4).ok_or_else(short)? as usize;
    let names = header.saturating_add(word(16).ok_or_else(short)? as usize);
    let names_len = word(20).ok_or_else(short)? as usize;
    let name_at = |offset: usize| -> Option<&[u8]> {
        let rest = btf.get(names.checked_add(offset)?..names.checked_add(names_len)?)?;
        rest.split(|&b| b == 0).next()
    };
    let info = word(at + 4).ok_or_else(short)?;
    let (vlen, kind_flag) = ((info & 0xffff) as usize, info >> 31 == 1);
    for m in 0..vlen {
        let base = at + 12 + 12 * m;
        let (name_off, offset) = (
            word(base).ok_or_else(short)? as usize,
            word(base + 8).ok_or_else(short)?,
        );
        if name_at(name_off) != Some(member.as_bytes()) {
            continue;
        }
        let (bits, field) = match kind_flag {
            true => (offset & 0xff_ffff, offset >> 24),
            false => (offset, 0),
        };
        if field != 0 || bits % 8 != 0 {
            return Err(format!("{name}.{member} is a bit field"));
        }
        return Ok(bits / 8);
    }
    Err(format!("struct {name} has no member {member}"))
}

/// The id of the type of kind `wanted` named `name` and where its `struct btf_type` starts.
fn find(btf: &[u8], wanted: u32, name: &str) -> Result<(u32, usize), String> {
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
            return Ok((id, at));
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
            KIND_STRUCT => "struct",
            _ => "type",
        }
    ))
}

/// The BTF of a program whose one function, `name`, is `int name(unsigned long long *ctx)`
/// (as a BPF compiler describes a raw tracepoint program, perf's `BPF_PROG` macro): its
/// types are `int` (1), `unsigned long long` (2), a pointer to it (3), the prototype (4) and
/// the function (5, global linkage).
pub fn program_btf(name: &str) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut add = |text: &str| {
        let at = names.len() as u32;
        names.extend(text.as_bytes());
        names.push(0);
        at
    };
    let (int, ull, ctx, func) = (add("int"), add("unsigned long long"), add("ctx"), add(name));
    let mut types: Vec<u32> = Vec::new();
    // INT "int": 4 bytes, signed (BTF_INT_SIGNED, 32 bits).
    types.extend([int, 1 << 24, 4, (1 << 24) | 32]);
    // INT "unsigned long long": 8 bytes, 64 bits.
    types.extend([ull, 1 << 24, 8, 64]);
    // PTR to 2.
    types.extend([0, 2 << 24, 2]);
    // FUNC_PROTO returning 1, one parameter `ctx` of type 3.
    types.extend([0, (13 << 24) | 1, 1, ctx, 3]);
    // FUNC `name` of prototype 4, global linkage (vlen 1).
    types.extend([func, (KIND_FUNC << 24) | 1, 4]);
    let types: Vec<u8> = types.iter().flat_map(|w| w.to_ne_bytes()).collect();
    with_header(&types, &names)
}

/// A BTF of `types` (each its `struct btf_type` words and extra bytes) and `names`, after
/// its header (`struct btf_header`, version 1).
fn with_header(types: &[u8], names: &[u8]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let data = with_header(&types, names);
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
        let unknown = with_header(&btf_type(1, 31, 0, 0), names);
        assert!(
            function_id(&unknown, "migrate")
                .unwrap_err()
                .contains("kind 31")
        );
        if let Ok(vmlinux) = read_vmlinux(&counterhal_system::System::host()) {
            let id = function_id(&vmlinux, "cgroup_migrate");
            assert!(id.as_ref().is_ok_and(|&id| id > 1), "{id:?}");
        }
    }
}
