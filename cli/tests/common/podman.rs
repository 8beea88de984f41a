//! A container image made for a test and run by podman with runc, as a host runs one.

use std::process::{Command, Output, Stdio};

use super::{compile_c, stderr};
use counterhal_conformance::skip::Need;

/// A container image made for the test (from `tests/data/container_work.c`, built static,
/// imported by `podman import`), removed when dropped.
pub struct Image(String);

impl Image {
    /// The image, or why there is none.
    pub fn make() -> Result<Image, (Need, String)> {
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-podman-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(&root).map_err(|e| (Need::System, e.to_string()))?;
        let source = include_str!("../data/container_work.c");
        let Some(program) = compile_c(&dir, "work", source, &["-O2", "-static"]) else {
            return Err((
                Need::Tools,
                "no static C library to build the container's work (apt-get install gcc \
                 libc6-dev)"
                    .into(),
            ));
        };
        std::fs::copy(&program, root.join("work")).map_err(|e| (Need::System, e.to_string()))?;
        let tar = dir.join("image.tar");
        let packed = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .map_err(|e| (Need::Tools, format!("tar: {e}")))?;
        if !packed.success() {
            return Err((Need::System, "tar could not pack the image".into()));
        }
        let name = format!("localhost/counterhal-test-work:{}", std::process::id());
        let imported = Command::new("podman")
            .args(["import", "--quiet", "--change", r#"ENTRYPOINT ["/work"]"#])
            .arg(&tar)
            .arg(&name)
            .output()
            .map_err(|e| (Need::System, format!("podman import: {e}")))?;
        if !imported.status.success() {
            return Err((
                Need::System,
                format!("podman import: {}", stderr(&imported)),
            ));
        }
        Ok(Image(name))
    }

    /// `podman run --rm` of the image with runc, counting `args`: the container's ID (its
    /// `--cidfile`) and what it printed (the page faults the kernel counted for its work).
    pub fn run(&self, args: &[&str]) -> (String, Output) {
        let cidfile = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-podman-cid-{}-{}",
            std::process::id(),
            args.join("-")
        ));
        std::fs::remove_file(&cidfile).ok();
        let (files, tasks) = (limit("Max open files", 65536), limit("Max processes", 4096));
        let out = Command::new("podman")
            .args(["run", "--rm", "--runtime", "runc", "--network", "none"])
            .arg(format!("--ulimit=nofile={files}:{files}"))
            .arg(format!("--ulimit=nproc={tasks}:{tasks}"))
            .arg("--cidfile")
            .arg(&cidfile)
            .arg(&self.0)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("podman runs");
        let id = std::fs::read_to_string(&cidfile).unwrap_or_default();
        std::fs::remove_file(&cidfile).ok();
        (id.trim().to_string(), out)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        Command::new("podman")
            .args(["rmi", "--force", &self.0])
            .output()
            .ok();
    }
}

/// This process's soft limit `name` (a line of /proc/self/limits), at most `most`: runc
/// fails to raise a container's limit past its own hard one, and podman asks for more than
/// these machines' by default.
fn limit(name: &str, most: u64) -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|soft| soft.parse::<u64>().ok())
        .map_or(1024, |soft| soft.min(most))
}
