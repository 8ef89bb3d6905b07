//! A workload phase's command: started in its own process group with the
//! campaign's GPUs visible, its output kept (up to [`KEEP_BYTES`] a
//! stream) in the run directory, watched while the window runs, and
//! stopped at the phase's end as the phase says: SIGTERM to the group,
//! then SIGKILL after the grace period ([`Running::stop`]); SIGKILL at
//! once ([`Running::kill`]); or left to exit on its own within the grace
//! period ([`Running::wait_exit`]). Every process it starts is held
//! ([`crate::contain`]: its own cgroup, else its descendants' tree), and
//! at the stop whatever of it is left goes, named; whatever happens, no
//! process of the job is left behind ([`Running`]'s drop kills what is
//! left).

use crate::contain::{Contained, Holder};
use crate::output::Tap;
use powerlab_campaign::model::WorkloadSpec;
use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use serde::Serialize;
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use crate::output::KEEP_BYTES;

/// How a campaign's workload commands are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkloadExec {
    /// The command runs (real GPUs, or a simulated node in real time
    /// asked to run it).
    Run,
    /// The simulated training job stands in; no command runs.
    #[default]
    Simulated,
}

/// Why a running workload must stop the phase now.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// It exited before the phase's end.
    Exited(String),
    /// It wrote more than [`KEEP_BYTES`] to a stream.
    Flooded {
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// Bytes written so far.
        bytes: u64,
    },
    /// A process of the job sees other GPUs than the campaign's
    /// (`pid (name)` and what it sees).
    GpuSet(String),
}

/// How the command ended, as `workload/<label>.json` and the event log
/// record it.
#[derive(Debug, Clone, Serialize)]
pub struct Ending {
    /// The command, program first.
    pub command: Vec<String>,
    /// Its process (and process group) id.
    pub pid: u32,
    /// When it started, run clock.
    pub started_ns: i64,
    /// When it ended, run clock.
    pub ended_ns: i64,
    /// When it was stopped: the moment before the signal that stopped it
    /// was sent, or the moment its exit was seen (run clock; None: it
    /// had exited before the stop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_ns: Option<i64>,
    /// `exited` (on its own), `sigterm` (stopped at the phase's end),
    /// `sigkill` (ignored SIGTERM for the grace period, or killed at the
    /// phase's end as its `stop = "sigkill"` asks).
    pub stopped_by: &'static str,
    /// Its exit code (None: ended by a signal).
    pub exit_code: Option<i32>,
    /// The signal that ended it (None: it exited).
    pub signal: Option<i32>,
    /// Bytes it wrote to stdout, and to stderr.
    pub stdout_bytes: u64,
    /// Bytes it wrote to stderr.
    pub stderr_bytes: u64,
    /// Files holding what of them was kept (run-directory relative).
    pub stdout_file: String,
    /// The stderr file.
    pub stderr_file: String,
    /// Processes of the job found alive after the stop (outside its
    /// process group: `pid (name)`), killed: a job must not load the GPUs
    /// into the rungs after its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub escaped: Vec<String>,
    /// What held the job's processes (`cgroup v2 …`, or the process tree).
    pub contained_by: String,
    /// Processes of the job still alive after SIGKILL (`pid (name)`):
    /// the run fails.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unkilled: Vec<String>,
}

/// A started workload command.
pub struct Running {
    child: Child,
    pgid: Option<Pid>,
    command: Vec<String>,
    started_ns: i64,
    out: Tap,
    err: Tap,
    rel: (String, String),
    ended: Option<ExitStatus>,
    /// When [`Running::check_at`] first saw it ended on its own, run
    /// clock ns: its end, where it came before the harness stopped it.
    exited_ns: Option<i64>,
    /// The value of [`TOKEN_VAR`] in the job's environment.
    token: String,
    /// What holds every process of the job.
    held: Contained,
    /// The `CUDA_VISIBLE_DEVICES` the job was given.
    gpu_set: String,
    /// When the job's processes' GPU set was last looked at.
    gpu_look: Option<Instant>,
}

/// The variable that marks every process of a workload.
pub const TOKEN_VAR: &str = "POWERLAB_WORKLOAD";

/// Whether `spec`'s command can start here: its `cwd` is a directory and
/// its program is found (a path, relative to `cwd`, or a name on `PATH`,
/// the phase's own `env` PATH first). Checked before any rung runs, so a
/// campaign does not fail at its last phase for a typo.
///
/// # Errors
///
/// What is missing, in words that name the phase's key.
pub fn check_startable(spec: &WorkloadSpec) -> Result<(), String> {
    let cwd = std::path::PathBuf::from(spec.cwd.clone().unwrap_or_else(|| ".".into()));
    if !cwd.is_dir() {
        return Err(format!(
            "workload {}: its cwd {} is not a directory on this node; create it or fix `cwd`",
            describe(&spec.command),
            cwd.display()
        ));
    }
    let program = std::path::Path::new(&spec.command[0]);
    let found = if spec.command[0].contains('/') {
        cwd.join(program).is_file()
    } else {
        let path = spec
            .env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        std::env::split_paths(&path).any(|d| d.join(program).is_file())
    };
    if found {
        return Ok(());
    }
    Err(format!(
        "workload {}: its program `{}` is not found on this node ({}); give its whole path, or install it",
        describe(&spec.command),
        spec.command[0],
        if spec.command[0].contains('/') {
            format!("relative to {}", cwd.display())
        } else {
            "on PATH".into()
        }
    ))
}

pub use powerlab_campaign::plan::file_stem;

/// The program in words for errors: `` `python train.py` ``.
pub fn describe(command: &[String]) -> String {
    // Escaped: a carriage return or an ANSI sequence in the campaign
    // cannot repaint the message (or the report's first line) it is in.
    let s = powerlab_core::words::shown(&command.join(" "));
    if s.chars().count() > 120 {
        let head: String = s.chars().take(117).collect();
        return format!("`{head}...`");
    }
    format!("`{s}`")
}

impl Running {
    /// Starts `spec`'s command in its own process group, `uuids` its only
    /// visible GPUs, its output into `run_dir/workload/<stem>.{stdout,stderr}`;
    /// `now_ns` reads the run clock (the spawn's moment is taken just
    /// before it).
    ///
    /// # Errors
    ///
    /// The command could not be started (not found, not executable, a
    /// working directory that does not exist), in words that name it.
    pub fn start(
        spec: &WorkloadSpec,
        run_dir: &Path,
        label: &str,
        uuids: &[String],
        now_ns: &dyn Fn() -> i64,
    ) -> Result<Running, String> {
        let dir = run_dir.join(powerlab_rundir::files::workload::DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let stem = file_stem(label);
        // Every process the job starts inherits this: one that leaves the
        // group (setsid, a daemon) is still found by it after the stop.
        let token = format!("{}-{}-{}", std::process::id(), stem, now_ns());
        let gpu_set = uuids.join(",");
        let command = || {
            let mut cmd = Command::new(&spec.command[0]);
            cmd.args(&spec.command[1..])
                .envs(&spec.env)
                .env("CUDA_VISIBLE_DEVICES", &gpu_set)
                .env("POWERLAB_RUNG", label)
                .env(TOKEN_VAR, &token)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(cwd) = &spec.cwd {
                cmd.current_dir(cwd);
            }
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            cmd
        };
        let mut holder = Holder::prepare(&stem);
        let started_ns = now_ns();
        let mut first = command();
        holder.apply(&mut first);
        let mut spawned = first.spawn();
        if spawned.is_err() && holder.is_cgroup() {
            // The cgroup could not be joined (the write was refused):
            // the tree holds the job instead.
            holder = holder.into_tree();
            spawned = command().spawn();
        }
        let mut child = spawned.map_err(|e| {
            let fix = match e.kind() {
                std::io::ErrorKind::NotFound => "check the program's path (give it whole, or put it on PATH) and the phase's `cwd`",
                std::io::ErrorKind::PermissionDenied => "make the program executable (chmod +x), or run it through its interpreter",
                _ => "check the phase's `command` and `cwd`",
            };
            format!("workload {} could not be started: {e}; {fix}", describe(&spec.command))
        })?;
        let pgid = Pid::from_raw(child.id() as i32);
        // Held from here: an error below drops it, which kills the job.
        let held = holder.hold(child.id());
        let taps = Self::taps(&mut child, &dir, &stem);
        let (out, err) = match taps {
            Ok(t) => t,
            Err(e) => {
                Self::kill_now(&mut child, pgid);
                return Err(format!(
                    "workload {}: cannot keep its output in {}: {e}",
                    describe(&spec.command),
                    dir.display()
                ));
            }
        };
        Ok(Running {
            child,
            pgid,
            command: spec.command.clone(),
            started_ns,
            out,
            err,
            rel: (
                format!("workload/{stem}.stdout"),
                format!("workload/{stem}.stderr"),
            ),
            ended: None,
            exited_ns: None,
            token,
            held,
            gpu_set,
            gpu_look: None,
        })
    }

    fn taps(child: &mut Child, dir: &Path, stem: &str) -> std::io::Result<(Tap, Tap)> {
        let so: ChildStdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let se: ChildStderr = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("no stderr pipe"))?;
        Ok((
            Tap::start(so, dir.join(format!("{stem}.stdout")))?,
            Tap::start(se, dir.join(format!("{stem}.stderr")))?,
        ))
    }

    fn kill_now(child: &mut Child, pgid: Option<Pid>) {
        if let Some(p) = pgid {
            let _ = kill_process_group(p, Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// When it was spawned, run clock.
    pub fn started_ns(&self) -> i64 {
        self.started_ns
    }

    /// Whether the phase must stop now: the command exited, or floods its
    /// output. Never blocks.
    pub fn check(&mut self) -> Option<Fault> {
        for (stream, tap) in [("stdout", &self.out), ("stderr", &self.err)] {
            if tap.bytes() > KEEP_BYTES {
                return Some(Fault::Flooded {
                    stream,
                    bytes: tap.bytes(),
                });
            }
        }
        self.held.observe();
        if let Some(breach) = self.gpu_breach() {
            return Some(Fault::GpuSet(breach));
        }
        if self.ended.is_none() {
            self.ended = self.child.try_wait().ok().flatten();
        }
        self.ended.map(|s| Fault::Exited(status_words(s)))
    }

    /// [`Running::check`] at `now_ns` (run clock): the first time it sees
    /// the command ended, that moment is kept as its end (the ending's
    /// `ended_ns`, not when the harness came to stop it: a job that died
    /// in its warm-up was recorded 7 s late).
    pub fn check_at(&mut self, now_ns: i64) -> Option<Fault> {
        let fault = self.check();
        if self.ended.is_some() && self.exited_ns.is_none() {
            self.exited_ns = Some(now_ns);
        }
        fault
    }

    /// A process of the job that sees other GPUs than the campaign's
    /// (looked at every 250 ms): one started with another
    /// `CUDA_VISIBLE_DEVICES`, or one that loaded the CUDA driver without
    /// any (`env -i`: it sees every GPU).
    fn gpu_breach(&mut self) -> Option<String> {
        if self
            .gpu_look
            .is_some_and(|t| t.elapsed() < Duration::from_millis(250))
        {
            return None;
        }
        self.gpu_look = Some(Instant::now());
        self.held
            .members()
            .iter()
            .find_map(|p| crate::contain::gpu_set_breach(p, &self.gpu_set))
    }

    /// The fault in words, naming the command and where its output is.
    pub fn fault_words(&self, fault: &Fault, label: &str, into_window_s: Option<f64>) -> String {
        let cmd = describe(&self.command);
        match fault {
            Fault::Exited(how) => {
                let when = into_window_s.map_or_else(
                    || "before the phase's window began".to_string(),
                    |s| format!("{s:.1} s into the window, before the phase's end"),
                );
                format!(
                    "workload {cmd} of rung {label} {how} {when}; its output is in {} and {}; the samples taken so far are kept",
                    self.rel.0, self.rel.1
                )
            }
            Fault::GpuSet(what) => format!(
                "workload {cmd} of rung {label}: {what}, not the campaign's GPUs ({}); the phase was stopped, the samples taken so far are kept; the job's GPUs are chosen by the campaign's `gpus`, and its processes must keep the CUDA_VISIBLE_DEVICES the harness gives them",
                self.gpu_set
            ),
            Fault::Flooded { stream, bytes } => format!(
                "workload {cmd} of rung {label} wrote {:.0} MiB to {stream}, more than the {} MiB a run keeps of it; the phase was stopped and the first {} MiB are in {}; send the job's logging to a file of its own (or quiet it) and run again; the samples taken so far are kept",
                *bytes as f64 / (1u64 << 20) as f64,
                KEEP_BYTES >> 20,
                KEEP_BYTES >> 20,
                if *stream == "stdout" {
                    &self.rel.0
                } else {
                    &self.rel.1
                }
            ),
        }
    }

    /// Stops the command: SIGTERM to its group, SIGKILL to whatever of the
    /// group is left after `grace`; waits for it. Returns how it ended.
    pub async fn stop(&mut self, grace: Duration, now_ns: impl Fn() -> i64) -> Ending {
        let (mut stopped_by, mut stop_ns) = ("exited", None);
        if self.check_exited().is_none() {
            stopped_by = "sigterm";
            stop_ns = Some(now_ns());
            self.signal(Signal::TERM);
        }
        let deadline = Instant::now() + grace;
        // The leader, then the rest of its group, within the grace.
        while Instant::now() < deadline && (self.check_exited().is_none() || self.group_alive()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.check_exited().is_none() || self.group_alive() {
            if self.check_exited().is_none() {
                stopped_by = "sigkill";
            }
            self.signal(Signal::KILL);
        }
        self.finish(stopped_by, stop_ns, now_ns).await
    }

    /// Kills the command's whole group at once (SIGKILL: the stop a
    /// phase with `stop = "sigkill"` asks for); returns the moment before
    /// the signal (None: it had exited already). [`Running::reap`] then
    /// says how it ended.
    pub fn kill(&mut self, now_ns: impl Fn() -> i64) -> Option<i64> {
        let at = self.check_exited().is_none().then(&now_ns);
        self.signal(Signal::KILL);
        at
    }

    /// Waits for a command [`Running::kill`] killed at `stop_ns` (None: it
    /// had exited on its own); returns how it ended.
    pub async fn reap(&mut self, stop_ns: Option<i64>, now_ns: impl Fn() -> i64) -> Ending {
        let by = if stop_ns.is_some() {
            "sigkill"
        } else {
            "exited"
        };
        self.finish(by, stop_ns, now_ns).await
    }

    /// Waits up to `limit` for the command to exit on its own, looking
    /// every 5 ms; returns when it was seen to (None: it has not).
    pub async fn wait_exit(&mut self, limit: Duration, now_ns: impl Fn() -> i64) -> Option<i64> {
        let deadline = Instant::now() + limit;
        loop {
            if self.check_exited().is_some() {
                return Some(now_ns());
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The end of every stop: waits for the leader, kills what escaped the
    /// group, keeps the output and says how it ended.
    async fn finish(
        &mut self,
        stopped_by: &'static str,
        stop_ns: Option<i64>,
        now_ns: impl Fn() -> i64,
    ) -> Ending {
        let status = match self.ended {
            Some(s) => s,
            None => self
                .child
                .wait()
                .unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(9)),
        };
        self.ended = Some(status);
        let mut escaped = self.kill_escaped();
        let leader = self.child.id() as i32;
        for p in self.held.kill_all() {
            if p.pgrp != leader
                && !escaped
                    .iter()
                    .any(|e| e.starts_with(&format!("{} (", p.pid)))
            {
                escaped.push(p.words());
            }
        }
        let unkilled: Vec<String> = self
            .held
            .wait_empty(Duration::from_secs(2))
            .await
            .iter()
            .map(crate::contain::Proc::words)
            .collect();
        self.held.release();
        // A process that escaped may have held the output open; past the
        // kill, what still holds it is not waited for.
        self.out.join_within(Duration::from_secs(2)).await;
        self.err.join_within(Duration::from_secs(2)).await;
        Ending {
            command: self.command.clone(),
            pid: self.child.id(),
            started_ns: self.started_ns,
            ended_ns: self.exited_ns.unwrap_or_else(&now_ns),
            stop_ns,
            stopped_by,
            exit_code: status.code(),
            signal: std::os::unix::process::ExitStatusExt::signal(&status),
            stdout_bytes: self.out.bytes(),
            stderr_bytes: self.err.bytes(),
            stdout_file: self.rel.0.clone(),
            stderr_file: self.rel.1.clone(),
            escaped,
            contained_by: self.held.words(),
            unkilled,
        }
    }

    /// Every live process that carries this job's token outside its
    /// process group (one that left with setsid, or as a daemon), killed;
    /// returns each as `pid (name)`.
    fn kill_escaped(&self) -> Vec<String> {
        let needle = format!("{TOKEN_VAR}={}", self.token);
        let mut killed = Vec::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return killed;
        };
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if !environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
                continue;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let name = head.split_once(" (").map_or("", |(_, n)| n);
            // `state ppid pgrp …`: a member of the job's own group was
            // killed with it (it may not have died yet).
            let pgrp = rest.split(' ').nth(2).and_then(|g| g.parse::<i32>().ok());
            let in_group = pgrp.is_some() && pgrp == self.pgid.map(|p| p.as_raw_nonzero().get());
            if in_group {
                continue;
            }
            if let (Some(p), false) = (Pid::from_raw(pid), rest.starts_with('Z')) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
                killed.push(format!("{pid} ({name})"));
            }
        }
        killed
    }

    fn check_exited(&mut self) -> Option<ExitStatus> {
        if self.ended.is_none() {
            self.ended = self.child.try_wait().ok().flatten();
        }
        self.ended
    }

    fn group_alive(&self) -> bool {
        self.pgid
            .is_some_and(|p| test_kill_process_group(p).is_ok())
    }

    fn signal(&self, sig: Signal) {
        if let Some(p) = self.pgid {
            let _ = kill_process_group(p, sig);
        }
    }
}

impl Drop for Running {
    /// A run that ends any other way (a panic, an error path) leaves no
    /// process of the group behind.
    fn drop(&mut self) {
        if self.ended.is_none() || self.group_alive() {
            self.signal(Signal::KILL);
            let _ = self.child.wait();
        }
        let _ = self.kill_escaped();
    }
}

/// An exit status in words: `exited with status 1`, `was killed by signal 9`.
fn status_words(s: ExitStatus) -> String {
    match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was ended by signal {sig}"),
        _ => "ended".into(),
    }
}
