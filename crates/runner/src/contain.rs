//! What holds a workload's every process, whatever it does to its
//! session, process group or environment (`setsid`, `env -i`, a daemon's
//! double fork): a cgroup v2 of its own where the machine lets powerlab
//! make one (a child of powerlab's own cgroup; the command joins it
//! before it is executed, so every descendant is born inside), else the
//! descendants' tree read from `/proc`, with powerlab the child
//! subreaper (`PR_SET_CHILD_SUBREAPER`), so that an orphan of the job is
//! adopted by powerlab instead of init and stays in view. At the stop,
//! everything held is killed ([`Contained::kill_all`]), and whatever is
//! still alive after [`Contained::wait_empty`] is named: the run fails.
//!
//! `POWERLAB_CONTAIN=tree` chooses the tree where a cgroup could be made
//! (to test it).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The variable that forces the descendants' tree (`tree`).
pub const CONTAIN_VAR: &str = "POWERLAB_CONTAIN";

/// One process of the job, as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Its id.
    pub pid: i32,
    /// Its name (`comm`).
    pub name: String,
    /// Its parent.
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub sid: i32,
    /// Its state letter (`Z`: a zombie, already dead).
    pub state: char,
    /// When it started, clock ticks after boot (a reused pid differs).
    pub start: u64,
}

impl Proc {
    /// `pid (name)`, as messages name it.
    pub fn words(&self) -> String {
        format!("{} ({})", self.pid, self.name)
    }
}

/// Reads one process's `stat`; None when it is gone.
pub fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(") ")?;
    let name = head.split_once(" (").map_or("", |(_, n)| n).to_string();
    let f: Vec<&str> = rest.split(' ').collect();
    // rest: state(0) ppid(1) pgrp(2) session(3) … starttime(19)
    Some(Proc {
        pid,
        name,
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        sid: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// Every process on the machine.
pub fn all_procs() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// How the job is held.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A cgroup v2 directory of its own.
    Cgroup(PathBuf),
    /// The descendants' tree, powerlab the subreaper.
    Tree,
}

/// A holder made before the command starts.
#[derive(Debug)]
pub struct Holder {
    kind: Kind,
    /// `<cgroup>/cgroup.procs`, for the child to join before it executes.
    procs: Option<CString>,
}

impl Holder {
    /// A cgroup under powerlab's own where one can be made, named after
    /// the rung (`stem`), else the tree. powerlab becomes the child
    /// subreaper either way (an orphan of the job is then powerlab's to
    /// kill and reap, not init's).
    pub fn prepare(stem: &str) -> Holder {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        let forced_tree = std::env::var(CONTAIN_VAR).is_ok_and(|v| v == "tree");
        let made = (!forced_tree)
            .then(|| make_cgroup(stem))
            .flatten()
            .and_then(|dir| {
                let procs = CString::new(
                    dir.join("cgroup.procs")
                        .into_os_string()
                        .into_encoded_bytes(),
                )
                .ok()?;
                Some((dir, procs))
            });
        match made {
            Some((dir, procs)) => Holder {
                kind: Kind::Cgroup(dir),
                procs: Some(procs),
            },
            None => Holder {
                kind: Kind::Tree,
                procs: None,
            },
        }
    }

    /// Whether a cgroup holds the job.
    pub fn is_cgroup(&self) -> bool {
        matches!(self.kind, Kind::Cgroup(_))
    }

    /// Gives up the cgroup (the command could not join it): the tree.
    pub fn into_tree(self) -> Holder {
        if let Kind::Cgroup(dir) = &self.kind {
            let _ = std::fs::remove_dir(dir);
        }
        Holder {
            kind: Kind::Tree,
            procs: None,
        }
    }

    /// Makes `cmd` join the cgroup between fork and exec (nothing for
    /// the tree).
    #[allow(unsafe_code)]
    pub fn apply(&self, cmd: &mut std::process::Command) {
        let Some(procs) = self.procs.clone() else {
            return;
        };
        // SAFETY: the closure runs in the forked child before exec; it
        // only makes two system calls (open, write) on a path prepared
        // before the fork, and allocates nothing, so it is
        // async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, move || {
                let fd = rustix::fs::open(
                    procs.as_c_str(),
                    rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )?;
                rustix::io::write(&fd, b"0")?;
                Ok(())
            });
        }
    }

    /// The holder of the started command `leader`.
    pub fn hold(self, leader: u32) -> Contained {
        let leader = leader as i32;
        let mut c = Contained {
            kind: self.kind,
            leader,
            since: read_proc(leader).map_or(0, |p| p.start),
            held: BTreeMap::new(),
            last_look: None,
            killed: Vec::new(),
        };
        c.observe();
        c
    }
}

/// powerlab's own cgroup v2 directory, and a new child of it for `stem`.
fn make_cgroup(stem: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // `id parent major:minor root mountpoint options … - fstype source …`
    let mount = mounts.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split(' ').next()? == "cgroup2" && pre.split(' ').nth(3)? == "/")
            .then(|| pre.split(' ').nth(4).map(PathBuf::from))
            .flatten()
    })?;
    let parent = mount.join(rel.trim_start_matches('/'));
    let name = format!(
        "powerlab-{}-{}-{}",
        std::process::id(),
        stem,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let dir = parent.join(name);
    std::fs::create_dir(&dir).ok()?;
    if !dir.join("cgroup.procs").is_file() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    Some(dir)
}

/// Every process of one started command.
#[derive(Debug)]
pub struct Contained {
    kind: Kind,
    leader: i32,
    /// The leader's start, clock ticks (an adopted orphan started later).
    since: u64,
    /// The tree's processes seen so far (pid → start), for the tree.
    held: BTreeMap<i32, u64>,
    last_look: Option<Instant>,
    /// Processes killed, to reap if powerlab adopted them.
    killed: Vec<i32>,
}

impl Contained {
    /// What holds the job, in words (`cgroup v2 /sys/fs/cgroup/…`, or
    /// `process tree (subreaper)`).
    pub fn words(&self) -> String {
        match &self.kind {
            Kind::Cgroup(d) => format!("cgroup v2 {}", d.display()),
            Kind::Tree => "process tree (powerlab the child subreaper)".into(),
        }
    }

    /// Looks at the tree again (at most every 50 ms): every descendant of
    /// a process already held, and every orphan powerlab adopted since the
    /// job began, is held from now on. A cgroup needs no looking.
    pub fn observe(&mut self) {
        if self.kind != Kind::Tree
            || self
                .last_look
                .is_some_and(|t| t.elapsed() < Duration::from_millis(50))
        {
            return;
        }
        self.last_look = Some(Instant::now());
        self.scan();
    }

    fn scan(&mut self) -> Vec<Proc> {
        let procs = all_procs();
        let me = std::process::id() as i32;
        let my_sid = procs.iter().find(|p| p.pid == me).map_or(0, |p| p.sid);
        // A pid seen before still names that process while its start matches.
        self.held
            .retain(|pid, start| procs.iter().any(|p| p.pid == *pid && p.start == *start));
        if let Some(l) = procs.iter().find(|p| p.pid == self.leader) {
            self.held.insert(l.pid, l.start);
        }
        loop {
            let before = self.held.len();
            for p in &procs {
                let child_of_held = self.held.contains_key(&p.ppid);
                // An orphan powerlab adopted that the looks missed (its
                // parent gone within one look): the job's if it left
                // powerlab's session or sits in the job's group. (A node
                // power command is powerlab's own child, in its session
                // and a group of its own.)
                let adopted = p.ppid == me
                    && p.start >= self.since
                    && p.pid != self.leader
                    && (p.sid != my_sid || p.pgrp == self.leader);
                if (child_of_held || adopted) && !self.held.contains_key(&p.pid) {
                    self.held.insert(p.pid, p.start);
                }
            }
            if self.held.len() == before {
                break;
            }
        }
        procs
            .into_iter()
            .filter(|p| self.held.get(&p.pid) == Some(&p.start))
            .collect()
    }

    /// The job's live processes now (zombies left out: already dead).
    pub fn members(&mut self) -> Vec<Proc> {
        let all = match &self.kind {
            Kind::Cgroup(dir) => std::fs::read_to_string(dir.join("cgroup.procs"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .filter_map(read_proc)
                .collect(),
            Kind::Tree => self.scan(),
        };
        all.into_iter().filter(|p| p.state != 'Z').collect()
    }

    /// Kills every process held (SIGKILL; a cgroup's `cgroup.kill` where
    /// the kernel has it, which also takes a process forking right now);
    /// returns those it found alive, as they were.
    pub fn kill_all(&mut self) -> Vec<Proc> {
        let mut killed: Vec<Proc> = Vec::new();
        // Stopped first, then killed, until a look finds none new: a
        // process cannot fork a new one between the look and the kill.
        for _ in 0..20 {
            let now: Vec<Proc> = self
                .members()
                .into_iter()
                .filter(|p| !killed.iter().any(|k| k.pid == p.pid && k.start == p.start))
                .collect();
            if now.is_empty() {
                break;
            }
            for p in &now {
                if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::STOP);
                }
            }
            killed.extend(now);
        }
        if let Kind::Cgroup(dir) = &self.kind {
            let _ = std::fs::write(dir.join("cgroup.kill"), "1");
        }
        for p in &killed {
            if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        self.killed.extend(killed.iter().map(|p| p.pid));
        killed
    }

    /// Waits up to `limit` for every process held to be gone, reaping
    /// those powerlab adopted; returns those still alive (they could not
    /// be killed: another user's, or stuck in the kernel).
    pub async fn wait_empty(&mut self, limit: Duration) -> Vec<Proc> {
        let deadline = Instant::now() + limit;
        loop {
            self.reap_adopted();
            let left = self.members();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            for p in &left {
                if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Reaps the killed processes powerlab adopted (never the leader,
    /// whose status its `Child` waits for, nor any other child).
    fn reap_adopted(&self) {
        let me = std::process::id() as i32;
        for &pid in self.killed.iter().filter(|p| **p != self.leader) {
            let adopted_zombie = read_proc(pid).is_some_and(|p| p.ppid == me && p.state == 'Z');
            if let (true, Some(pid)) = (adopted_zombie, rustix::process::Pid::from_raw(pid)) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
    }

    /// The cgroup removed once empty (a tree has nothing to remove).
    pub fn release(&mut self) {
        if let Kind::Cgroup(dir) = &self.kind {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for Contained {
    /// Nothing the job started outlives its holder.
    fn drop(&mut self) {
        if !self.members().is_empty() {
            self.kill_all();
            let t0 = Instant::now();
            while !self.members().is_empty() && t0.elapsed() < Duration::from_secs(2) {
                self.reap_adopted();
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.reap_adopted();
        self.release();
    }
}

/// What `p` sees of the GPUs, where that is not `expected` (the
/// `CUDA_VISIBLE_DEVICES` the harness gave the job): another value in the
/// environment it started with, or none at all in a process that loaded
/// the CUDA driver (`env -i`: every GPU). None when it keeps to them, or
/// its environment cannot be read. (A process that changes the variable
/// inside itself before it loads CUDA is not seen here.)
pub fn gpu_set_breach(p: &Proc, expected: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{}/environ", p.pid)).ok()?;
    let key = b"CUDA_VISIBLE_DEVICES=";
    let seen = environ
        .split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(key.as_slice()));
    match seen {
        Some(v) if v == expected.as_bytes() => None,
        Some(v) => Some(format!(
            "process {} sees CUDA_VISIBLE_DEVICES={}",
            p.words(),
            powerlab_core::words::shown(&String::from_utf8_lossy(v))
        )),
        None => {
            let maps = std::fs::read_to_string(format!("/proc/{}/maps", p.pid)).ok()?;
            maps.contains("libcuda.so").then(|| {
                format!(
                    "process {} loaded the CUDA driver without CUDA_VISIBLE_DEVICES (it sees every GPU)",
                    p.words()
                )
            })
        }
    }
}
