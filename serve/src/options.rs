//! How `counterhal serve`'s option values are read: each a function from the word given to
//! its value, or what a right one would be. The command's parser ([`crate::Config`]'s
//! fields are its options) calls them; they live here, beside what they check.

use std::time::Duration;

use crate::{CgroupModeArg, Config, DEFAULT_PORT, NameLabelArg, TimesArg};

pub use crate::http::listen::parse as listen;

/// `--listen`'s value where it is not given: the loopback, on [`DEFAULT_PORT`].
pub const DEFAULT_LISTEN: &str = "127.0.0.1:19110";
const _: () = assert!(DEFAULT_PORT == 19110, "DEFAULT_LISTEN names DEFAULT_PORT");

/// `--cgroup-mode`'s words, in the order `--help` offers them.
pub const CGROUP_MODES: [&str; 3] = ["auto", "bpf", "perf-events"];

/// `--cgroup-mode`: `auto`, `bpf` or `perf-events`.
pub fn cgroup_mode(text: &str) -> Result<CgroupModeArg, String> {
    match text {
        "auto" => Ok(CgroupModeArg::Auto),
        "bpf" => Ok(CgroupModeArg::Bpf),
        "perf-events" => Ok(CgroupModeArg::PerfEvents),
        _ => Err("auto, bpf or perf-events".to_string()),
    }
}

/// `--times`' words.
pub const TIMES: [&str; 2] = ["multiplexed", "always"];

/// `--times`: `multiplexed` or `always`.
pub fn times(text: &str) -> Result<TimesArg, String> {
    match text {
        "multiplexed" => Ok(TimesArg::Multiplexed),
        "always" => Ok(TimesArg::Always),
        _ => Err("multiplexed or always".to_string()),
    }
}

/// `--kubelet-log-labels`' words.
pub const NAME_LABELS: [&str; 3] = ["namespace", "pod", "container"];

/// `--kubelet-log-labels`: some of `namespace`, `pod` and `container`, comma-separated.
pub fn name_labels(text: &str) -> Result<Vec<NameLabelArg>, String> {
    text.split(',')
        .map(|name| match name {
            "namespace" => Ok(NameLabelArg::Namespace),
            "pod" => Ok(NameLabelArg::Pod),
            "container" => Ok(NameLabelArg::Container),
            _ => Err("some of namespace, pod and container, comma-separated".to_string()),
        })
        .collect()
}

/// A whole number from `least` to `most`.
pub fn within<N: std::str::FromStr + PartialOrd + std::fmt::Display>(
    text: &str,
    least: N,
    most: N,
) -> Result<N, String> {
    let right = || format!("a whole number from {least} to {most}");
    match text.parse::<N>() {
        Ok(n) if n >= least && n <= most => Ok(n),
        _ => Err(right()),
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: crate::http::listen::Listen::At(std::net::SocketAddr::from((
                [127, 0, 0, 1],
                DEFAULT_PORT,
            ))),
            events: Vec::new(),
            metrics: Vec::new(),
            rules: false,
            rules_window: "1m".to_string(),
            cgroups: Vec::new(),
            cgroup_depth: None,
            max_cgroups: 64,
            departed_for: crate::counting::DEPARTED_FOR,
            departed_max: crate::counting::DEPARTED_MAX,
            cgroup_mode: CgroupModeArg::Auto,
            kubelet_cgroup_root: "/".to_string(),
            kubelet_logs: None,
            kubelet_log_labels: NameLabelArg::ALL.to_vec(),
            slurm_cgroup_slice: "system.slice".to_string(),
            cpus: None,
            per_cpu: false,
            per_socket: false,
            per_die: false,
            times: TimesArg::Multiplexed,
            max_connections: 16,
            header_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            web_config: None,
            records: None,
            records_size: crate::records::journal::FILE_BYTES,
            records_files: crate::records::journal::FILES,
        }
    }
}

/// A PromQL range duration (`30s`, `1m`, `1h30m`): a Prometheus duration from 1ms to
/// [`crate::http::web::LONGEST`], as PromQL's parser takes a range (`0`, `0s` and longer ones refused).
pub fn promql_duration(text: &str) -> Result<String, String> {
    let range = format!(
        "a rate() window is from 1ms to {}",
        crate::http::web::LONGEST
    );
    match crate::http::web::duration(text) {
        Ok(window) if text != "0" && !window.is_zero() => Ok(text.to_string()),
        Ok(_) => Err(format!("`{text}` is no time: {range}")),
        Err(e) => Err(format!("{e}; {range}")),
    }
}

/// `--departed-for`: a Prometheus duration, 0 included (a removed cgroup's last counts
/// exported by one scrape alone).
pub fn departed_for(text: &str) -> Result<Duration, String> {
    crate::http::web::duration(text)
        .map_err(|e| format!("{e}: a Prometheus duration (30s, 10m, 1h)"))
}

/// `--records-size`: bytes, with `K` (or `k`), `M` (or `m`) or `G` for 1024, 1024² or 1024³
/// of them (as coreutils' `head -c` reads them), from 4K to 1T.
pub fn bytes(text: &str) -> Result<u64, String> {
    let right = || "bytes from 4K to 1T, with K, M or G (8M)".to_string();
    let (number, unit) = match text.char_indices().last() {
        Some((at, 'K' | 'k')) => (&text[..at], 1u64 << 10),
        Some((at, 'M' | 'm')) => (&text[..at], 1 << 20),
        Some((at, 'G')) => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    let value: u64 = number.parse().map_err(|_| right())?;
    match value.checked_mul(unit) {
        Some(size) if (4096..=1 << 40).contains(&size) => Ok(size),
        _ => Err(right()),
    }
}

/// A list of CPUs (`0-3,8`), at least one.
pub fn cpu_list(text: &str) -> Result<counterhal::CpuList, String> {
    match text.parse::<counterhal::CpuList>() {
        Ok(cpus) if !cpus.is_empty() => Ok(cpus),
        Ok(_) => Err("the list names no CPU: give at least one (0-3,8)".to_string()),
        Err(e) => Err(format!("{e}: a list of CPUs is numbers and ranges (0-3,8)")),
    }
}

/// A Slurm `CgroupSlice` (`system.slice`).
pub fn slurm_slice(text: &str) -> Result<String, String> {
    crate::labels::slurm::Slurmstepd::new(text).map(|_| text.to_string())
}

/// A kubelet `--cgroup-root` (`/`, `/kubelet`).
pub fn kubelet_root(text: &str) -> Result<String, String> {
    crate::labels::kubernetes::Kubelet::new(text).map(|_| text.to_string())
}

/// A duration in seconds between 0.01 and 300.
pub fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(0.01..=300.0).contains(&value) {
        return Err(format!("{text} s is outside 0.01 to 300 seconds"));
    }
    Ok(Duration::from_secs_f64(value))
}

#[cfg(test)]
mod tests {
    /// The sizes coreutils' `head -c` takes mean as many bytes here, and one it refuses
    /// (`1g`) is refused. Oracle: GNU coreutils 9.1's `head -c SIZE /dev/zero`, its bytes
    /// counted.
    #[test]
    fn a_records_size_is_read_as_head_reads_one() {
        for size in ["8M", "64k", "1m", "4K", "4096", "1G"] {
            let out = std::process::Command::new("sh")
                .args(["-c", "head -c \"$1\" /dev/zero | wc -c", "sh", size])
                .output()
                .expect("sh, head and wc");
            let by_head: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            assert_eq!(super::bytes(size), Ok(by_head), "{size}");
        }
        for bad in [
            "1g",
            "1",
            "4095",
            "2T",
            "M",
            "",
            "-1M",
            "99999999999999999999G",
        ] {
            let error = super::bytes(bad).unwrap_err();
            assert!(error.contains("4K to 1T"), "{bad}: {error}");
        }
    }
}
