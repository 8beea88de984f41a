//! The step's counts summed across its nodes: srun listens, each node's slurmstepd sends it
//! the node's counts when its last task ends, and srun prints their sum at the step's end.
//!
//! SPANK gives a plugin no channel from slurmstepd back to srun, so the plugin makes one as
//! Slurm's own mpi/pmi2 plugin does: srun listens on a port of its own and hands it to the
//! step in its environment, and each node connects back to the address slurmstepd knows srun
//! by (`SLURM_SRUN_COMM_HOST`, which slurmd sets in every task's environment). In srun the
//! plugin sets the variable in its own environment (`spank_setenv` works in slurmstepd
//! alone), which srun passes to the step; a `SLURM_` name, because `--export=NONE` passes
//! those.
//!
//! What a node sends: one line, `counterhal-slurm 1 TOKEN JOB STEP NODE TASKS METRICS`
//! (METRICS: the metric names asked for, by commas, or `-`), then the node's counts as perf's
//! stat records (a pipe stream, as `perf stat record -o -` writes).
//! The token, 128 random bits srun made, keeps another process's connection out; every
//! report is bounded in size and in time, and a bad one is said and left out.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use counterhal::Reading;

use crate::recording::Recording;
use crate::recording::read::read_bytes;
use crate::recording::write::encode_pipe;
use crate::report::say;

/// The variable of the step's environment that names srun's port and token (`PORT TOKEN`).
pub const VARIABLE: &str = "SLURM_SPANK_COUNTERHAL_COUNTS";

/// The first word of a report's line, and the version of what follows it.
const MAGIC: &str = "counterhal-slurm 1";

/// The most bytes a node's report may hold (its line and its records: a few KiB for perf
/// stat's events; a long event list stays far below).
const MOST_BYTES: u64 = 256 << 10;

/// The most bytes a report's first line may take: a sender whose first line is not the
/// step's, token included, is cut off within them.
const LINE_BYTES: usize = 512;

/// How long a node may take to connect and send, and srun to read one report.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long srun waits at the step's end for the nodes that have not reported: each node
/// sends before slurmstepd tells srun its tasks ended, so a report missing then is late or
/// lost.
const GRACE: Duration = Duration::from_secs(3);

/// One node's counts, as it sent them.
#[derive(Debug)]
pub struct Report {
    /// The job and step it says it counted.
    pub job: u32,
    /// See `job`.
    pub step: u32,
    /// The node's name.
    pub node: String,
    /// Its tasks of the step.
    pub tasks: u32,
    /// Its counts, each event's summed over its tasks.
    pub recording: Recording,
    /// The metrics asked for (`stat -M`'s names), printed beside the events.
    pub metrics: Vec<String>,
}

/// What srun knows of its step.
#[derive(Clone, Debug, Default)]
pub struct StepInfo {
    /// The job's id.
    pub job: u32,
    /// The step's id.
    pub step: u32,
    /// Its nodes (None: not known, then srun waits the grace time for late reports).
    pub nodes: Option<u32>,
    /// Its command line.
    pub command_line: Vec<String>,
}

/// In srun: the port the nodes send to, and the reports they sent.
pub struct Listening {
    received: Arc<Mutex<Vec<Report>>>,
    stop: Arc<AtomicBool>,
    accepter: Option<JoinHandle<()>>,
}

impl Listening {
    /// Listens on a port of all of this host's addresses (one of `ports`, where given; else
    /// any free one) and starts taking reports; the step's environment variable's value
    /// (`PORT TOKEN`), or why not.
    pub fn start(ports: Option<(u16, u16)>) -> Result<(Listening, String), String> {
        let token = token().map_err(|e| format!("no random token: {e}"))?;
        let listener = listen(ports, &token)?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("the port listened on: {e}"))?
            .port();
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("the port listened on: {e}"))?;
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accepter = {
            let (received, stop, token) = (received.clone(), stop.clone(), token.clone());
            std::thread::Builder::new()
                .name("counterhal-gather".into())
                .spawn(move || accept(&listener, &token, &received, &stop))
                .map_err(|e| format!("no thread to take the nodes' counts: {e}"))?
        };
        let value = format!("{port} {token}");
        Ok((
            Listening {
                received,
                stop,
                accepter: Some(accepter),
            },
            value,
        ))
    }

    /// Waits for `info`'s nodes to report (the grace time at most), stops listening, and
    /// returns the reports of `info`'s step, the others said and left out.
    pub fn finish(mut self, info: &StepInfo) -> Vec<Report> {
        let ours = |report: &Report| (report.job, report.step) == (info.job, info.step);
        let waited = Instant::now();
        while waited.elapsed() < GRACE {
            let have = self
                .received
                .lock()
                .map_or(0, |r| r.iter().filter(|r| ours(r)).count());
            if info.nodes.is_some_and(|nodes| have >= nodes as usize) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop.store(true, Ordering::Relaxed);
        // The thread ends before the plugin returns: Slurm unloads the plugin after
        // slurm_spank_exit, and no code of its may run then.
        if let Some(accepter) = self.accepter.take() {
            let _ = accepter.join();
        }
        let reports = std::mem::take(&mut *self.received.lock().unwrap_or_else(|e| e.into_inner()));
        let (ours, others): (Vec<Report>, Vec<Report>) = reports.into_iter().partition(ours);
        for other in others {
            say(&format!(
                "a report of job {} step {} from {} is left out: this is job {} step {}",
                other.job, other.step, other.node, info.job, info.step
            ));
        }
        if let Some(nodes) = info.nodes
            && ours.len() < nodes as usize
        {
            say(&format!(
                "{} of the step's {nodes} nodes sent no counts in time; the sum is of the \
                 {} that did",
                nodes as usize - ours.len(),
                ours.len()
            ));
        }
        ours
    }
}

/// Takes reports on `listener` until `stop`, each bounded in size and time; the
/// connections are read side by side without blocking, so that one that sends nothing holds
/// back no other. A last pass after `stop` takes what had arrived.
fn accept(listener: &TcpListener, token: &str, received: &Mutex<Vec<Report>>, stop: &AtomicBool) {
    let mut open: Vec<Incoming> = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        // Past MOST_OPEN, the kernel's queue holds the next until one is done.
        while open.len() < MOST_OPEN {
            let Ok((stream, from)) = listener.accept() else {
                break;
            };
            match stream.set_nonblocking(true) {
                Ok(()) => open.push(Incoming {
                    stream,
                    from,
                    bytes: Vec::new(),
                    vouched: false,
                    deadline: Instant::now() + IO_TIMEOUT,
                }),
                Err(e) => say(&format!("a report from {from} is left out: {e}")),
            }
        }
        open.retain_mut(|incoming| match incoming.read(token) {
            None => true,
            Some(Ok(())) => {
                match read_report(&incoming.bytes, token) {
                    Ok(report) => {
                        if let Ok(mut reports) = received.lock() {
                            reports.push(report);
                        }
                    }
                    Err(why) => say(&format!(
                        "a report from {} is left out: {why}",
                        incoming.from
                    )),
                }
                false
            }
            Some(Err(why)) => {
                say(&format!(
                    "a report from {} is left out: {why}",
                    incoming.from
                ));
                false
            }
        });
        if stopping {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The most connections read at once (a step's nodes send one each, at their ends; the
/// others wait in the kernel's queue): with [`MOST_BYTES`] each, 256 MiB at most, and only
/// from senders that hold the step's token.
const MOST_OPEN: usize = 1024;

/// A connection being read: what it sent so far, whether its first line was the step's,
/// and until when it may send.
struct Incoming {
    stream: TcpStream,
    from: std::net::SocketAddr,
    bytes: Vec<u8>,
    vouched: bool,
    deadline: Instant,
}

impl Incoming {
    /// Reads what has arrived: `Some(Ok)` where the sender closed, `Some(Err)` where its
    /// first line is not the step's (with `token`), past [`MOST_BYTES`], past its deadline or
    /// on an error, `None` while it may send more.
    fn read(&mut self, token: &str) -> Option<Result<(), String>> {
        let mut chunk = [0u8; 16384];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Some(Ok(())),
                Ok(n) if (self.bytes.len() + n) as u64 > MOST_BYTES => {
                    return Some(Err(format!("it holds more than {MOST_BYTES} bytes")));
                }
                Ok(n) => {
                    self.bytes.extend_from_slice(&chunk[..n]);
                    if !self.vouched {
                        match first_line(&self.bytes) {
                            Some(Ok(line)) => match vouch(line, token) {
                                Ok(()) => self.vouched = true,
                                Err(why) => return Some(Err(why)),
                            },
                            Some(Err(why)) => return Some(Err(why)),
                            None => {}
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return (Instant::now() > self.deadline)
                        .then(|| Err(format!("it sent for more than {IO_TIMEOUT:?}")));
                }
                Err(e) => return Some(Err(e.to_string())),
            }
        }
    }
}

/// What a first line that is not a report's is said to be.
fn not_a_report() -> String {
    format!("its first line is not `{MAGIC} TOKEN JOB STEP NODE TASKS METRICS`")
}

/// The first line of `bytes` (without its newline) once it is whole, `Err` where none ends
/// within [`LINE_BYTES`], `None` while it may still come.
fn first_line(bytes: &[u8]) -> Option<Result<&[u8], String>> {
    match bytes.iter().take(LINE_BYTES).position(|&b| b == b'\n') {
        Some(end) => Some(Ok(&bytes[..end])),
        None if bytes.len() >= LINE_BYTES => Some(Err(not_a_report())),
        None => None,
    }
}

/// Whether a report's first `line` begins as the step's do: the magic, then `token`.
fn vouch(line: &[u8], token: &str) -> Result<(), String> {
    let line = String::from_utf8_lossy(line);
    let rest = line
        .strip_prefix(MAGIC)
        .and_then(|rest| rest.strip_prefix(' '))
        .ok_or_else(not_a_report)?;
    match rest.split(' ').next() == Some(token) {
        true => Ok(()),
        false => Err("its token is not this step's".to_string()),
    }
}

/// One node's report, as `bytes` hold it: its line, whose token must be `token`, then its
/// records; or what was wrong with it.
fn read_report(bytes: &[u8], token: &str) -> Result<Report, String> {
    let line = first_line(bytes).unwrap_or_else(|| Err(not_a_report()))?;
    vouch(line, token)?;
    let records = &bytes[line.len() + 1..];
    let line = String::from_utf8_lossy(line);
    let fields: Vec<&str> = line.split(' ').collect();
    let [_, _, _, job, step, node, tasks, metrics] = fields.as_slice() else {
        return Err(not_a_report());
    };
    let number = |what: &str, text: &str| {
        text.parse::<u32>()
            .map_err(|_| format!("its {what} `{text}` is no number"))
    };
    let (job, step, tasks) = (
        number("job", job)?,
        number("step", step)?,
        number("task count", tasks)?,
    );
    let node = node.to_string();
    let recording =
        read_bytes(records, &format!("node {node}'s report")).map_err(|e| e.to_string())?;
    let metrics = match *metrics {
        "-" => Vec::new(),
        list => list.split(',').map(str::to_string).collect(),
    };
    Ok(Report {
        job,
        step,
        node,
        tasks,
        recording,
        metrics,
    })
}

/// A listener on every address of this host (IPv6 and IPv4, or IPv4 alone where IPv6 is
/// off), on a free port of `ports` (tried from a place `token` picks, so that steps started
/// together spread over the range) or, without a range, any free port; or why none.
fn listen(ports: Option<(u16, u16)>, token: &str) -> Result<TcpListener, String> {
    let bind = |port: u16| {
        TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)))
    };
    let Some((low, high)) = ports else {
        return bind(0).map_err(|e| format!("cannot listen for the nodes' counts: {e}"));
    };
    let span = u32::from(high - low) + 1;
    let start = u32::from_str_radix(&token[..8], 16).unwrap_or(0) % span;
    let mut last = None;
    for i in 0..span {
        let port = low + ((start + i) % span) as u16;
        match bind(port) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(format!(
        "no free port in plugstack.conf's ports={low}-{high} to listen for the nodes' counts \
         ({})",
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

/// 128 random bits, in hex.
fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// In slurmstepd: sends the node's `recording` of `tasks` tasks, with the `metrics` asked
/// for, to srun at `host` (the step's `SLURM_SRUN_COMM_HOST`), as `value` (the step's
/// [`VARIABLE`]) names its port and token; or why not.
pub fn send(
    host: &str,
    value: &str,
    (job, step, node, tasks): (u32, u32, &str, u32),
    recording: &Recording,
    metrics: &[String],
) -> Result<(), String> {
    let (port, token) = value
        .split_once(' ')
        .and_then(|(port, token)| Some((port.parse::<u16>().ok()?, token)))
        .filter(|(_, token)| token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("{VARIABLE}=`{value}` is not `PORT TOKEN`"))?;
    let node: String = node
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("srun's address {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("srun's address {host}: none"))?;
    let mut stream = TcpStream::connect_timeout(&address, IO_TIMEOUT)
        .map_err(|e| format!("srun at {address}: {e}"))?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let metrics = match metrics.is_empty() {
        true => "-".to_string(),
        false => metrics.join(","),
    };
    let metrics: String = metrics
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    let message = format!("{MAGIC} {token} {job} {step} {node} {tasks} {metrics}\n");
    let mut message = message.into_bytes();
    message.extend(encode_pipe(recording));
    stream
        .write_all(&message)
        .map_err(|e| format!("srun at {address}: {e}"))
}

/// The step's counts: each event's readings added over the nodes' `reports` (matched by
/// name, in the first report's order), titled with `info`; what a node lacked said.
pub fn sum(info: &StepInfo, reports: &[Report]) -> Option<Recording> {
    let first = reports.first()?;
    let mut summed = first.recording.clone();
    for event in &mut summed.events {
        event.reading = None;
    }
    for event in &mut summed.events {
        let mut lacking = Vec::new();
        for report in reports {
            match report
                .recording
                .events
                .iter()
                .find(|theirs| theirs.name == event.name)
                .and_then(|theirs| theirs.reading)
            {
                Some(reading) => {
                    let total = event.reading.get_or_insert_with(Reading::default);
                    total.value += reading.value;
                    total.time_enabled += reading.time_enabled;
                    total.time_running += reading.time_running;
                }
                None => lacking.push(report.node.as_str()),
            }
        }
        // Said where some nodes counted it and others did not (none: `<not counted>`).
        if event.reading.is_some() && !lacking.is_empty() {
            say(&format!(
                "{} was not counted on {}; the step's sum is of the other nodes",
                event.name,
                lacking.join(", ")
            ));
        }
    }
    for report in reports {
        summed.elapsed_ns = summed.elapsed_ns.max(report.recording.elapsed_ns);
    }
    let tasks: u32 = reports.iter().map(|r| r.tasks).sum();
    let nodes = reports.len();
    summed.command_line = vec![format!(
        "{} (job {} step {}, {} node{}, {} task{})",
        info.command_line.join(" "),
        info.job,
        crate::report::step_name(info.step),
        nodes,
        if nodes == 1 { "" } else { "s" },
        tasks,
        if tasks == 1 { "" } else { "s" }
    )];
    Some(summed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{Attr, RecordedEvent};

    /// A node's recording: page-faults counted `value` times, and task-clock not counted.
    fn node(value: u64) -> Recording {
        let event = |name: &str, config, reading| RecordedEvent {
            name: name.to_string(),
            attr: Attr {
                type_: 1,
                config: [config, 0, 0],
                flags: 0,
            },
            unit: None,
            reading,
        };
        Recording {
            command_line: vec!["work".into()],
            events: vec![
                event(
                    "page-faults",
                    2,
                    Some(Reading {
                        value,
                        time_enabled: 1000,
                        time_running: 1000,
                    }),
                ),
                event("task-clock", 1, None),
            ],
            elapsed_ns: value * 10,
        }
    }

    /// Done when: two nodes' reports sent over TCP to srun's port are taken and summed
    /// (each event's value and times added, the longest elapsed time, the tasks added); a
    /// report with another token, one of another step, one that is no report and one past
    /// the size bound are left out, and a connection that sends nothing holds back neither
    /// the others nor the step's end.
    ///
    /// Oracle: the kernel's TCP loopback, and perf's stat records as this crate's writer and
    /// reader give them (held to perf 6.1 and 7.2 by cli/tests/stat_record.rs).
    #[test]
    fn the_nodes_counts_reach_srun_and_are_summed() {
        let (listening, value) = Listening::start(None).expect("listening on loopback");
        let (port, token) = value.split_once(' ').unwrap();
        assert!(port.parse::<u16>().is_ok() && token.len() == 32, "{value}");
        // One that connects first and sends nothing, held open to the end: it holds back
        // no other.
        let _silent = std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap())).unwrap();
        let metric = ["page_faults_per_second".to_string()];
        send("127.0.0.1", &value, (7, 0, "n1", 2), &node(100), &metric).unwrap();
        let stranger = format!("{port} {}", "0".repeat(32));
        send("127.0.0.1", &stranger, (7, 0, "n3", 1), &node(1), &[]).unwrap();
        send("127.0.0.1", &value, (7, 1, "n4", 1), &node(1), &[]).unwrap();
        std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap()))
            .and_then(|mut s| s.write_all(b"GET / HTTP/1.0\r\n\r\n"))
            .unwrap();
        let mut big = std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap())).unwrap();
        let line = format!("{MAGIC} {token} 7 0 n5 1 -\n");
        let _ = big.write_all(line.as_bytes());
        let _ = big.write_all(&vec![0u8; MOST_BYTES as usize + 10]);
        drop(big);
        send("127.0.0.1", &value, (7, 0, "n2", 3), &node(250), &[]).unwrap();
        let info = StepInfo {
            job: 7,
            step: 0,
            nodes: Some(2),
            command_line: vec!["work".into(), "1".into()],
        };
        let waited = Instant::now();
        let reports = listening.finish(&info);
        assert!(waited.elapsed() < GRACE, "waited {:?}", waited.elapsed());
        let mut nodes: Vec<&str> = reports.iter().map(|r| r.node.as_str()).collect();
        nodes.sort();
        assert_eq!(nodes, ["n1", "n2"]);
        let n1 = reports.iter().find(|r| r.node == "n1").unwrap();
        assert_eq!((n1.tasks, &n1.metrics[..]), (2, &metric[..]));
        let summed = sum(&info, &reports).unwrap();
        assert_eq!(
            summed.events[0].reading,
            Some(Reading {
                value: 350,
                time_enabled: 2000,
                time_running: 2000,
            })
        );
        assert_eq!(summed.events[1].reading, None);
        assert_eq!(summed.elapsed_ns, 2500);
        assert_eq!(
            summed.command_line,
            ["work 1 (job 7 step 0, 2 nodes, 5 tasks)"]
        );
    }

    /// Done when: with a range of ports, srun listens on one of them, the next step on
    /// another while the first holds its own, and a range with none free is said, naming it.
    ///
    /// Oracle: the kernel's TCP binds on this host.
    #[test]
    fn srun_listens_within_the_ports_it_is_given() {
        // Two free ports side by side, found by binding and letting them go.
        let free = (20000..60000u16)
            .step_by(7)
            .find(|&p| {
                TcpListener::bind(("::", p)).is_ok() && TcpListener::bind(("::", p + 1)).is_ok()
            })
            .unwrap();
        let port_of = |value: &str| value.split_once(' ').unwrap().0.parse::<u16>().unwrap();
        let range = Some((free, free + 1));
        let (first, a) = Listening::start(range).unwrap();
        let (second, b) = Listening::start(range).unwrap();
        let mut ports = [port_of(&a), port_of(&b)];
        ports.sort();
        assert_eq!(ports, [free, free + 1]);
        let Err(why) = Listening::start(range) else {
            panic!("a third listener in a range of two");
        };
        assert!(why.contains(&format!("ports={free}-{}", free + 1)), "{why}");
        let info = StepInfo {
            nodes: Some(0),
            ..StepInfo::default()
        };
        assert!(first.finish(&info).is_empty() && second.finish(&info).is_empty());
    }

    /// Done when: a node refuses a variable that is not `PORT TOKEN`, and says why a send
    /// failed where no srun listens, at once.
    #[test]
    fn a_node_says_why_its_counts_were_not_sent() {
        for bad in ["", "12", "x 0123", "70000 00000000000000000000000000000000"] {
            let why = send("127.0.0.1", bad, (1, 0, "n", 1), &node(1), &[]).unwrap_err();
            assert!(why.contains(VARIABLE), "{bad}: {why}");
        }
        // A port no one listens on: the listener made and closed.
        let port = TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let value = format!("{port} {}", "a".repeat(32));
        let why = send("127.0.0.1", &value, (1, 0, "n", 1), &node(1), &[]).unwrap_err();
        assert!(why.contains("srun at 127.0.0.1"), "{why}");
    }
}
