//! `bpf(2)`: the maps and programs of the per-cgroup counting mode.
//! The `union bpf_attr` members it passes are `#[repr(C)]` copies of the kernel's, pinned by
//! `const` assertions below and by a test against the system's `linux/bpf.h`; each command
//! passes the size of its own member, and the kernel takes a shorter `bpf_attr` as zeroes.
//! See the parent module's `# Safety` note.

use std::ffi::CStr;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::os_error::{Errno, last_errno};

/// `BPF_MAP_CREATE`.
pub const BPF_MAP_CREATE: u32 = 0;
/// `BPF_MAP_LOOKUP_ELEM`.
pub const BPF_MAP_LOOKUP_ELEM: u32 = 1;
/// `BPF_MAP_UPDATE_ELEM`.
pub const BPF_MAP_UPDATE_ELEM: u32 = 2;
/// `BPF_MAP_DELETE_ELEM`.
pub const BPF_MAP_DELETE_ELEM: u32 = 3;
/// `BPF_MAP_GET_NEXT_KEY`.
pub const BPF_MAP_GET_NEXT_KEY: u32 = 4;
/// `BPF_PROG_LOAD`.
pub const BPF_PROG_LOAD: u32 = 5;
/// `BPF_OBJ_PIN`: an object pinned at a path of a BPF file system.
pub const BPF_OBJ_PIN: u32 = 6;
/// `BPF_OBJ_GET`: a descriptor of the object pinned at a path.
pub const BPF_OBJ_GET: u32 = 7;
/// `BPF_PROG_GET_FD_BY_ID`.
pub const BPF_PROG_GET_FD_BY_ID: u32 = 13;
/// `BPF_MAP_GET_FD_BY_ID`.
pub const BPF_MAP_GET_FD_BY_ID: u32 = 14;
/// `BPF_OBJ_GET_INFO_BY_FD`.
pub const BPF_OBJ_GET_INFO_BY_FD: u32 = 15;
/// `BPF_BTF_LOAD`.
pub const BPF_BTF_LOAD: u32 = 18;
/// `BPF_BTF_GET_FD_BY_ID`.
pub const BPF_BTF_GET_FD_BY_ID: u32 = 19;
/// `BPF_LINK_GET_FD_BY_ID`.
pub const BPF_LINK_GET_FD_BY_ID: u32 = 30;
/// `BPF_PROG_TEST_RUN`.
pub const BPF_PROG_TEST_RUN: u32 = 10;
/// `BPF_RAW_TRACEPOINT_OPEN`: attaches a raw tracepoint or tracing program, its link's
/// descriptor returned.
pub const BPF_RAW_TRACEPOINT_OPEN: u32 = 17;

/// `BPF_MAP_TYPE_HASH`: values by key, allocated as they are added.
pub const MAP_HASH: u32 = 1;
/// `BPF_MAP_TYPE_ARRAY`: values by index, allocated at creation.
pub const MAP_ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: perf event descriptors a program reads by index.
pub const MAP_PERF_EVENT_ARRAY: u32 = 4;
/// `BPF_MAP_TYPE_PERCPU_HASH`: a hash whose every value is kept once per CPU.
pub const MAP_PERCPU_HASH: u32 = 5;
/// `BPF_MAP_TYPE_PERCPU_ARRAY`: an array whose every value is kept once per CPU.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_PROG_TYPE_RAW_TRACEPOINT`: a program at a tracepoint, its arguments untyped
/// (`BPF_RAW_TRACEPOINT_OPEN`), or run by `BPF_PROG_TEST_RUN`.
pub const PROG_RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING`: a program at a kernel function's entry or exit (a BPF
/// trampoline), the function named by its BTF id at load.
pub const PROG_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`: a tracing program at a tracepoint, its arguments typed by BTF.
#[cfg_attr(not(test), allow(dead_code))]
pub const TRACE_RAW_TP: u32 = 23;
/// `BPF_TRACE_FENTRY`: a tracing program run at its function's entry.
pub const TRACE_FENTRY: u32 = 24;
/// `BPF_TRACE_FEXIT`: a tracing program run at its function's exit.
pub const TRACE_FEXIT: u32 = 25;
/// `BPF_F_PRESERVE_ELEMS`: a perf event array keeps its events once the descriptor that put
/// them there is closed (Linux 5.10).
pub const F_PRESERVE_ELEMS: u32 = 1 << 11;
/// `BPF_NOEXIST`: an update that only creates.
pub const BPF_NOEXIST: u64 = 1;
/// `BPF_F_TEST_RUN_ON_CPU`: `BPF_PROG_TEST_RUN` runs the program on the CPU named.
pub const BPF_F_TEST_RUN_ON_CPU: u32 = 1;

/// The `BPF_MAP_CREATE` member of `union bpf_attr`, up to `map_name`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MapCreateAttr {
    /// `map_type`.
    pub map_type: u32,
    /// `key_size`.
    pub key_size: u32,
    /// `value_size`.
    pub value_size: u32,
    /// `max_entries`.
    pub max_entries: u32,
    /// `map_flags`.
    pub map_flags: u32,
    /// `inner_map_fd`.
    pub inner_map_fd: u32,
    /// `numa_node`.
    pub numa_node: u32,
    /// `map_name`: up to 15 bytes, NUL-terminated.
    pub map_name: [u8; 16],
}

/// The `BPF_MAP_*_ELEM` member of `union bpf_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct MapElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The `BPF_PROG_LOAD` member of `union bpf_attr`, up to `core_relo_cnt`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    attach_btf_id: u32,
    attach_btf_obj_fd: u32,
    core_relo_cnt: u32,
}

/// The `BPF_RAW_TRACEPOINT_OPEN` member of `union bpf_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawTracepointAttr {
    name: u64,
    prog_fd: u32,
    pad: u32,
}

/// The `BPF_PROG_TEST_RUN` member of `union bpf_attr`, up to `cpu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
}

/// The `BPF_OBJ_PIN` and `BPF_OBJ_GET` member of `union bpf_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct ObjAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    pad: u32,
}

/// The `BPF_*_GET_FD_BY_ID` member of `union bpf_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct GetIdAttr {
    id: u32,
    next_id: u32,
    open_flags: u32,
}

/// The `BPF_OBJ_GET_INFO_BY_FD` member of `union bpf_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// The `BPF_BTF_LOAD` member of `union bpf_attr`, up to `btf_log_level`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BtfLoadAttr {
    btf: u64,
    btf_log_buf: u64,
    btf_size: u32,
    btf_log_size: u32,
    btf_log_level: u32,
    pad: u32,
}

const _: () = {
    assert!(std::mem::offset_of!(ObjAttr, file_flags) == 12);
    assert!(size_of::<GetIdAttr>() == 12);
    assert!(std::mem::offset_of!(InfoAttr, info) == 8);
    assert!(std::mem::offset_of!(BtfLoadAttr, btf_log_level) == 24);
    assert!(std::mem::offset_of!(ProgLoadAttr, prog_btf_fd) == 72);
    assert!(std::mem::offset_of!(ProgLoadAttr, func_info) == 80);
    assert!(std::mem::offset_of!(ProgLoadAttr, attach_btf_obj_fd) == 112);
};

const _: () = {
    assert!(size_of::<MapCreateAttr>() == 44);
    assert!(std::mem::offset_of!(MapCreateAttr, numa_node) == 24);
    assert!(std::mem::offset_of!(MapCreateAttr, map_name) == 28);
    assert!(size_of::<MapElemAttr>() == 32);
    assert!(std::mem::offset_of!(MapElemAttr, flags) == 24);
    assert!(size_of::<ProgLoadAttr>() == 120);
    assert!(std::mem::offset_of!(ProgLoadAttr, prog_name) == 48);
    assert!(std::mem::offset_of!(ProgLoadAttr, expected_attach_type) == 68);
    assert!(std::mem::offset_of!(ProgLoadAttr, attach_btf_id) == 108);
    assert!(std::mem::offset_of!(ProgLoadAttr, core_relo_cnt) == 116);
    assert!(size_of::<RawTracepointAttr>() == 16);
    assert!(size_of::<TestRunAttr>() == 72);
    assert!(std::mem::offset_of!(TestRunAttr, flags) == 64);
    assert!(std::mem::offset_of!(TestRunAttr, cpu) == 68);
};

/// One `bpf(cmd, attr, size_of::<A>())` call, EINTR retried; the call's return value.
///
/// # Safety
/// Every address `attr` holds must point to memory valid for what `cmd` reads or writes
/// there, for the sizes the other fields give, for the duration of the call.
unsafe fn bpf<A>(cmd: u32, attr: &mut A) -> Result<i64, Errno> {
    let size = size_of::<A>() as libc::c_uint;
    let pointer: *mut A = attr;
    loop {
        // SAFETY: `pointer` is a live `A` of `size` bytes (a `#[repr(C)]` member of the
        // kernel's `union bpf_attr`); the addresses it holds are valid, as the caller promises.
        let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, pointer, size) };
        if ret >= 0 {
            return Ok(ret);
        }
        match last_errno() {
            libc::EINTR => continue,
            errno => return Err(errno),
        }
    }
}

/// A name the kernel shows for a map or program (bpftool's, `/proc/PID/fdinfo`): at most 15
/// bytes of `name`, NUL-terminated.
fn object_name(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (slot, byte) in out.iter_mut().zip(name.bytes().take(15)) {
        *slot = byte;
    }
    out
}

/// `BPF_MAP_CREATE`: a new map, its descriptor (`map_name` is set from `name`).
///
/// # Errors
/// The kernel's errno: EPERM without CAP_BPF, EINVAL for a type or size it refuses, ENOMEM.
pub fn map_create(attr: &MapCreateAttr, name: &str) -> Result<OwnedFd, Errno> {
    let mut attr = MapCreateAttr {
        map_name: object_name(name),
        ..*attr
    };
    // SAFETY: this member holds no address.
    let fd = unsafe { bpf(BPF_MAP_CREATE, &mut attr) }?;
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `BPF_MAP_*_ELEM` on `map` with `key` and `value`, each as long as the map's key and value
/// (which the caller checks).
fn map_elem(
    cmd: u32,
    map: BorrowedFd<'_>,
    key: Option<&[u8]>,
    value: *mut u8,
    flags: u64,
) -> Result<(), Errno> {
    let mut attr = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: key.map_or(0, |key| key.as_ptr() as u64),
        value: value as u64,
        flags,
        ..Default::default()
    };
    // SAFETY: `key` and `value` point to live buffers as long as the map's key and value (the
    // callers take them as slices of those lengths); the kernel writes only into `value`.
    unsafe { bpf(cmd, &mut attr) }.map(drop)
}

/// `BPF_MAP_LOOKUP_ELEM`: `key`'s value into `value` (of a per-CPU map: one value, each
/// rounded up to 8 bytes, per possible CPU).
///
/// # Errors
/// ENOENT for a key not in the map; EINVAL, EFAULT for wrong sizes.
pub fn map_lookup(map: BorrowedFd<'_>, key: &[u8], value: &mut [u8]) -> Result<(), Errno> {
    map_elem(BPF_MAP_LOOKUP_ELEM, map, Some(key), value.as_mut_ptr(), 0)
}

/// `BPF_MAP_UPDATE_ELEM`: `key` set to `value` (`flags`: 0 any, [`BPF_NOEXIST`]).
///
/// # Errors
/// EEXIST under [`BPF_NOEXIST`] for a key present, E2BIG for a full map, EBADF for a perf
/// event array given no perf event.
pub fn map_update(map: BorrowedFd<'_>, key: &[u8], value: &[u8], flags: u64) -> Result<(), Errno> {
    // The kernel only reads `value` here.
    map_elem(
        BPF_MAP_UPDATE_ELEM,
        map,
        Some(key),
        value.as_ptr().cast_mut(),
        flags,
    )
}

/// `BPF_MAP_DELETE_ELEM`.
///
/// # Errors
/// ENOENT for a key not in the map.
pub fn map_delete(map: BorrowedFd<'_>, key: &[u8]) -> Result<(), Errno> {
    map_elem(BPF_MAP_DELETE_ELEM, map, Some(key), std::ptr::null_mut(), 0)
}

/// Where a program is attached, as `BPF_PROG_LOAD` is told.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttachTo {
    /// `expected_attach_type` ([`TRACE_FENTRY`] for a [`PROG_TRACING`] program).
    pub attach_type: u32,
    /// `attach_btf_id`: the kernel function's id in the kernel's BTF (`/sys/kernel/btf/vmlinux`).
    pub btf_id: u32,
}

/// A program's BTF at load: the BTF object, and its functions (`struct bpf_func_info`: the
/// first instruction, then the `BTF_KIND_FUNC` type id, of each).
#[derive(Clone, Copy, Debug)]
pub struct ProgBtf<'a> {
    /// The BTF object ([`btf_load`]).
    pub btf: BorrowedFd<'a>,
    /// Pairs of words: instruction offset, function type id.
    pub func_info: &'a [[u32; 2]],
}

/// `BPF_PROG_LOAD` of `insns` (each instruction its 8 bytes, as the kernel's `struct
/// bpf_insn`), attached where `attach` says (the default for the types that need not say),
/// the verifier writing its log into `log` (NUL-terminated; an empty `log` asks for none);
/// with the BTF of the program (`btf`: a program another can be attached to, at its
/// functions) and, for a tracing program attached to another program's function
/// (`attach.btf_id` in that program's BTF), that program (`attach_prog`).
///
/// # Errors
/// The kernel's errno, `log` holding what the verifier said (EACCES, EINVAL: refused;
/// ENOSPC: the log was too small; EPERM: no CAP_BPF or CAP_PERFMON).
#[allow(clippy::too_many_arguments)] // the members of `union bpf_attr` a load takes
pub fn prog_load_with(
    prog_type: u32,
    attach: AttachTo,
    attach_prog: Option<BorrowedFd<'_>>,
    btf: Option<ProgBtf<'_>>,
    insns: &[u64],
    license: &std::ffi::CStr,
    name: &str,
    log: &mut [u8],
) -> Result<OwnedFd, Errno> {
    let mut attr = ProgLoadAttr {
        prog_type,
        expected_attach_type: attach.attach_type,
        attach_btf_id: attach.btf_id,
        attach_btf_obj_fd: attach_prog.map_or(0, |p| p.as_raw_fd() as u32),
        prog_btf_fd: btf.map_or(0, |b| b.btf.as_raw_fd() as u32),
        func_info_rec_size: if btf.is_some() { 8 } else { 0 },
        func_info: btf.map_or(0, |b| b.func_info.as_ptr() as u64),
        func_info_cnt: btf.map_or(0, |b| b.func_info.len() as u32),
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: u32::from(!log.is_empty()),
        log_size: log.len() as u32,
        // No buffer at all for no log: the kernel refuses an address with log level 0.
        log_buf: if log.is_empty() {
            0
        } else {
            log.as_mut_ptr() as u64
        },
        prog_name: object_name(name),
        ..Default::default()
    };
    // SAFETY: `insns` holds `insn_cnt` 8-byte instructions, `license` is NUL-terminated,
    // `func_info` holds `func_info_cnt` records of 8 bytes, and `log` has `log_size` writable
    // bytes; all live for the call.
    let fd = unsafe { bpf(BPF_PROG_LOAD, &mut attr) }?;
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `BPF_PROG_TEST_RUN` of `prog` once on `cpu` (`BPF_F_TEST_RUN_ON_CPU`, a raw tracepoint
/// program: run there by an interrupt, in the context of the task running there); the
/// program's return value.
///
/// # Errors
/// ENXIO for a CPU offline, EINVAL for a program type that cannot be run so.
pub fn prog_run_on_cpu(prog: BorrowedFd<'_>, cpu: u32) -> Result<u32, Errno> {
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        flags: BPF_F_TEST_RUN_ON_CPU,
        cpu,
        ..Default::default()
    };
    // SAFETY: this member holds no address (no data, no context).
    unsafe { bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
    Ok(attr.retval)
}

/// `BPF_RAW_TRACEPOINT_OPEN`: attaches `prog`, a [`PROG_RAW_TRACEPOINT`] program, at the
/// tracepoint `tracepoint` (`cgroup_rmdir`), or a [`PROG_TRACING`] program (no tracepoint)
/// where it was loaded for; attached while the returned link is open.
///
/// # Errors
/// ENOENT for no such tracepoint; EINVAL for a program of another type; ENOTSUPP (524) where
/// the kernel has no BPF trampoline for this architecture.
pub fn attach_raw(prog: BorrowedFd<'_>, tracepoint: Option<&CStr>) -> Result<OwnedFd, Errno> {
    let mut attr = RawTracepointAttr {
        name: tracepoint.map_or(0, |name| name.as_ptr() as u64),
        prog_fd: prog.as_raw_fd() as u32,
        ..Default::default()
    };
    // SAFETY: `name` is 0 or a NUL-terminated string that lives for the call.
    let fd = unsafe { bpf(BPF_RAW_TRACEPOINT_OPEN, &mut attr) }?;
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `BPF_MAP_UPDATE_ELEM` of a `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: slot `index` holds the perf
/// event `event` (the map takes its own reference).
///
/// # Errors
/// EBADF, EINVAL for an event the array refuses (inherited, of another kind), E2BIG for an
/// index past the array.
pub fn map_update_perf_event(
    map: BorrowedFd<'_>,
    index: u32,
    event: BorrowedFd<'_>,
) -> Result<(), Errno> {
    let value = event.as_raw_fd() as u32;
    map_update(map, &index.to_ne_bytes(), &value.to_ne_bytes(), 0)
}

/// A descriptor the kernel just returned, owned.
fn owned(fd: i64) -> OwnedFd {
    // SAFETY: the kernel just returned `fd` as a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// `BPF_MAP_GET_NEXT_KEY`: the key after `key` (the first with `None`) into `next`.
///
/// # Errors
/// ENOENT past the last key.
pub fn map_next_key(map: BorrowedFd<'_>, key: Option<&[u8]>, next: &mut [u8]) -> Result<(), Errno> {
    map_elem(BPF_MAP_GET_NEXT_KEY, map, key, next.as_mut_ptr(), 0)
}

/// `BPF_OBJ_PIN`: `object` pinned at `path` (in a BPF file system).
///
/// # Errors
/// EPERM where `path`'s directory is not of a BPF file system, EEXIST where something is
/// pinned there already, ENOENT for no such directory.
pub fn obj_pin(object: BorrowedFd<'_>, path: &CStr) -> Result<(), Errno> {
    let mut attr = ObjAttr {
        pathname: path.as_ptr() as u64,
        bpf_fd: object.as_raw_fd() as u32,
        ..Default::default()
    };
    // SAFETY: `pathname` is a NUL-terminated string that lives for the call.
    unsafe { bpf(BPF_OBJ_PIN, &mut attr) }.map(drop)
}

/// `BPF_OBJ_GET`: a descriptor of the object pinned at `path`.
///
/// # Errors
/// ENOENT where nothing is pinned there, EPERM for a path outside a BPF file system.
pub fn obj_get(path: &CStr) -> Result<OwnedFd, Errno> {
    let mut attr = ObjAttr {
        pathname: path.as_ptr() as u64,
        ..Default::default()
    };
    // SAFETY: `pathname` is a NUL-terminated string that lives for the call.
    unsafe { bpf(BPF_OBJ_GET, &mut attr) }.map(owned)
}

/// `BPF_{PROG,MAP,BTF,LINK}_GET_FD_BY_ID` (`cmd`): a descriptor of the object `id`.
///
/// # Errors
/// ENOENT for an object gone (or never made); EPERM without CAP_SYS_ADMIN.
pub fn fd_by_id(cmd: u32, id: u32) -> Result<OwnedFd, Errno> {
    let mut attr = GetIdAttr {
        id,
        ..Default::default()
    };
    // SAFETY: this member holds no address.
    unsafe { bpf(cmd, &mut attr) }.map(owned)
}

/// `BPF_OBJ_GET_INFO_BY_FD`: the object's `struct bpf_{prog,map,link,btf}_info` into `info`
/// (the kernel writes at most `info.len()` bytes); `btf` and `btf_size` for a BTF object's
/// data are set by the caller in `info` as the kernel's struct has them. The bytes written:
/// fewer than `info.len()` where the kernel's struct is shorter (an older kernel).
///
/// # Errors
/// EINVAL, EFAULT for a buffer the kernel refuses.
pub fn obj_info(object: BorrowedFd<'_>, info: &mut [u8]) -> Result<usize, Errno> {
    let mut attr = InfoAttr {
        bpf_fd: object.as_raw_fd() as u32,
        info_len: info.len() as u32,
        info: info.as_mut_ptr() as u64,
    };
    // SAFETY: `info` has `info_len` writable bytes; where the caller set an address in it (a
    // BTF object's `btf`), that buffer is as long as the `btf_size` beside it.
    unsafe { bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr) }?;
    Ok(attr.info_len as usize)
}

/// Where `struct bpf_prog_info` holds `id` (a u32).
pub const PROG_INFO_ID: usize = 4;
/// Where `struct bpf_prog_info` holds `recursion_misses` (a u64, Linux 5.12).
pub const PROG_INFO_RECURSION_MISSES: usize = 208;

/// What `BPF_OBJ_GET_INFO_BY_FD` says of a program that its users report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgInfo {
    /// The program's id (`bpftool prog show id N`).
    pub id: u32,
    /// The times the kernel skipped the program because a BPF program was already running on
    /// that CPU; `None` before Linux 5.12, which does not count them.
    pub recursion_misses: Option<u64>,
}

/// `BPF_OBJ_GET_INFO_BY_FD` of a program: its id and its `recursion_misses`.
///
/// # Errors
/// As [`obj_info`]; EBADF, EINVAL for a descriptor that is no program.
pub fn prog_info(program: BorrowedFd<'_>) -> Result<ProgInfo, Errno> {
    const END: usize = PROG_INFO_RECURSION_MISSES + 8;
    let mut info = [0u8; END];
    let written = obj_info(program, &mut info)?;
    let at = |offset: usize, bytes: usize| &info[offset..offset + bytes];
    Ok(ProgInfo {
        id: u32::from_ne_bytes(at(PROG_INFO_ID, 4).try_into().unwrap_or_default()),
        recursion_misses: (written >= END).then(|| {
            u64::from_ne_bytes(
                at(PROG_INFO_RECURSION_MISSES, 8)
                    .try_into()
                    .unwrap_or_default(),
            )
        }),
    })
}

/// `BPF_OBJ_GET_INFO_BY_FD` of a BTF object: its data.
///
/// # Errors
/// As [`obj_info`].
pub fn btf_data(btf: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
    // struct bpf_btf_info: btf (u64), btf_size (u32), id (u32), ...
    let mut info = [0u8; 16];
    obj_info(btf, &mut info)?;
    let size = u32::from_ne_bytes([info[8], info[9], info[10], info[11]]);
    let mut data = vec![0u8; size as usize];
    let mut info = [0u8; 16];
    info[..8].copy_from_slice(&(data.as_mut_ptr() as u64).to_ne_bytes());
    info[8..12].copy_from_slice(&size.to_ne_bytes());
    obj_info(btf, &mut info)?;
    Ok(data)
}

/// `BPF_BTF_LOAD` of the BTF `data`.
///
/// # Errors
/// EINVAL for BTF the kernel refuses; EPERM without CAP_BPF.
pub fn btf_load(data: &[u8]) -> Result<OwnedFd, Errno> {
    let mut attr = BtfLoadAttr {
        btf: data.as_ptr() as u64,
        btf_size: data.len() as u32,
        ..Default::default()
    };
    // SAFETY: `btf` points to `btf_size` readable bytes that live for the call; no log.
    unsafe { bpf(BPF_BTF_LOAD, &mut attr) }.map(owned)
}

/// `flock(fd, LOCK_EX)` (`exclusive`) or `LOCK_UN`, EINTR retried.
///
/// # Errors
/// The errno of `flock`.
pub fn lock(fd: BorrowedFd<'_>, exclusive: bool) -> Result<(), Errno> {
    let operation = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_UN
    };
    loop {
        // SAFETY: `fd` is an open descriptor; flock reads nothing else.
        if unsafe { libc::flock(fd.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        match last_errno() {
            libc::EINTR => continue,
            errno => return Err(errno),
        }
    }
}
