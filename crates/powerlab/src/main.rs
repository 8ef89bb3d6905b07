//! `powerlab`: the command line over the gpu-power-lab libraries. Parses
//! arguments, picks the backend the user asked for (never silently the
//! simulated one), shows progress, and maps outcomes to exit codes.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

/// `println!` that never panics: a closed stdout (`| head -1`, `> /dev/full`)
/// drops the line and the run goes on; everything printed is also in the run
/// directory (`events.jsonl`, `report/`).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `print!` that never panics (see `outln!`).
#[allow(unused_macros)]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `eprintln!` that never panics on a closed stderr.
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

mod cli;
mod cmd_collate;
mod cmd_compare;
mod cmd_observe;
mod cmd_preflight;
mod consent;
// Without the `mpi` feature only the refusal is reachable.
mod cmd_plan;
mod cmd_predict;
mod cmd_run;
mod metrics;
mod node;
mod node_power;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod rack;
mod recording;
mod ui;

/// `--version`: version, git revision, CUDA major, features and target.
pub const LONG_VERSION: &str = env!("POWERLAB_LONG_VERSION");

/// Exit codes (also in docs/commands.md, "Exit codes"): 0 ok, 1 error (or, for `health-diff`, the
/// captures differ), 2 usage, 3 preflight failed, 4 run failed (fault or
/// interlock), 128 + N stopped by signal N (130 SIGINT, 143 SIGTERM).
pub mod exit {
    /// Any error not covered below.
    pub const ERROR: i32 = 1;
    /// `health-diff`: the two captures differ (diff's convention); `compare`:
    /// a regression is flagged.
    pub const DIFFERENT: i32 = 1;
    /// `health-diff` and `compare`: an input cannot be read (diff's convention).
    pub const TROUBLE: i32 = 2;
    /// Preflight refused the node.
    pub const PREFLIGHT: i32 = 3;
    /// A fault or interlock stopped the run.
    pub const RUN_FAILED: i32 = 4;
    /// Ctrl-C.
    pub const INTERRUPTED: i32 = 130;

    /// The signal that stopped the run (0: none seen yet).
    pub static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

    /// The exit code of an interrupted run: 128 + the number of the signal
    /// that stopped it (130 for Ctrl-C, 143 for SIGTERM), 130 if none was
    /// recorded.
    pub fn interrupted() -> i32 {
        match STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) {
            0 => INTERRUPTED,
            n => 128 + n,
        }
    }
}

/// This build: name, version and git revision (recorded in every manifest).
pub fn tool_info() -> powerlab_rundir::ToolInfo {
    powerlab_rundir::ToolInfo {
        name: "powerlab".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_rev: env!("POWERLAB_GIT_REV").into(),
    }
}

/// NVLink multicast (NVLS) stays off for this process and everything it
/// loads or starts, unless the user set it. Called first thing in `main`,
/// while the process has one thread: changing the environment is only
/// sound then.
fn keep_nvls_off() {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: no other thread exists yet (no runtime, logger thread,
        // MPI link or engine has started), so nothing reads the environment
        // concurrently.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var("NCCL_NVLS_ENABLE", "0")
        };
    }
}

/// How this process's GPUs were chosen when a launcher started several
/// ranks (set once in `main`, read by the node run for the manifest).
pub static GPU_BINDING: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Under a launcher that started several ranks on this host, gives this
/// rank its share of the host's GPUs (`CUDA_VISIBLE_DEVICES`) unless the
/// launcher or the user already chose. Called in `main` while the process
/// has one thread. Err: the host's GPUs cannot be split among its ranks.
fn bind_local_rank() -> Result<(), String> {
    if powerlab_rack::launcher::detect_from_process().is_none_or(|l| l.world_size <= 1) {
        return Ok(());
    }
    let env = |k: &str| std::env::var(k).ok();
    let binding = powerlab_rack::launcher::binding(env, powerlab_rack::launcher::host_gpu_count())?;
    if let powerlab_rack::launcher::Binding::Split { devices, .. } = &binding {
        // SAFETY: no other thread exists yet (see `keep_nvls_off`).
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var("CUDA_VISIBLE_DEVICES", devices)
        };
    }
    let _ = GPU_BINDING.set(binding.describe());
    Ok(())
}

/// Re-executes this binary with a `libnccl.so` link on the loader path when
/// NCCL ships only as `libnccl.so.2` (see `powerlab_cuda::libs::nccl_shim_dir`).
/// Returns only if no re-execution was needed or it failed.
fn reexec_for_nccl() {
    let Some(dir) = powerlab_cuda::libs::nccl_shim_dir() else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut path = std::ffi::OsString::from(&dir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    tracing::info!(
        "NCCL is installed as libnccl.so.2 only: re-executing with {} on LD_LIBRARY_PATH",
        dir.display()
    );
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("LD_LIBRARY_PATH", path)
        .env(powerlab_cuda::libs::NCCL_SHIM_ENV, &dir)
        .exec();
    errln!(
        "warning: could not re-execute with the libnccl.so link in {}: {err}",
        dir.display()
    );
}

/// `calibrate`: the built-in calibration campaign through `run`.
fn calibrate(a: &cli::CalibrateArgs) -> anyhow::Result<i32> {
    if a.opts.sensor.is_some() {
        errln!(
            "error: calibrate measures the sensors itself: --sensor does not apply (use it with `run`)"
        );
        return Ok(2);
    }
    if a.opts.no_collate {
        errln!("error: calibrate writes sensor.json when it collates: --no-collate does not apply");
        return Ok(2);
    }
    let file = std::env::temp_dir().join(format!("powerlab-calibrate-{}.toml", std::process::id()));
    std::fs::write(&file, include_str!("../../../campaigns/calibrate.toml"))?;
    let run = cli::RunArgs {
        file: file.clone(),
        opts: a.opts.clone(),
    };
    let code = cmd_run::run(&run);
    let _ = std::fs::remove_file(&file);
    code
}

/// `completions SHELL` and `manpage`: generated from the argument
/// definitions, so they never disagree with `--help`.
fn generate(what: &cli::Command) -> anyhow::Result<i32> {
    use clap::CommandFactory;
    use std::io::Write as _;
    // The man pages carry the plain version (the long one is for --version).
    let mut cmd = cli::Cli::command().version(env!("CARGO_PKG_VERSION"));
    // Rendered into memory first: a closed or full stdout is an error
    // (exit 1), never a panic inside the generator.
    let mut text = Vec::new();
    match what {
        cli::Command::Completions(a) => {
            clap_complete::generate(a.shell, &mut cmd, "powerlab", &mut text);
        }
        cli::Command::Manpage(cli::ManpageArgs {
            out_dir: Some(dir), ..
        }) => {
            std::fs::create_dir_all(dir)?;
            let mut pages = vec![("powerlab".to_string(), cmd.clone())];
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let name = format!("powerlab-{}", sub.get_name());
                pages.push((name.clone(), sub.clone().name(name)));
            }
            for (name, page) in pages {
                let mut roff = Vec::new();
                clap_mangen::Man::new(page).render(&mut roff)?;
                let path = dir.join(format!("{name}.1"));
                std::fs::write(&path, roff)
                    .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
            }
            return Ok(0);
        }
        _ => clap_mangen::Man::new(cmd).render(&mut text)?,
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&text)
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("writing to standard output: {e}"))?;
    Ok(0)
}

fn main() {
    let mut command = <cli::Cli as clap::CommandFactory>::command();
    let matches = command.get_matches_mut();
    let args = match <cli::Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    if let Err(e) = cli::check_backend_options(&matches, &mut command) {
        e.exit();
    }
    let real_gpus = match &args.command {
        cli::Command::Run(a) => a.backend == cli::BackendKind::Cuda,
        cli::Command::Calibrate(a) => a.opts.backend == cli::BackendKind::Cuda,
        cli::Command::Preflight(_) => true,
        _ => false,
    };
    if real_gpus {
        keep_nvls_off();
        if let Err(e) = bind_local_rank() {
            errln!("error: {e}");
            std::process::exit(exit::ERROR);
        }
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("POWERLAB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    if real_gpus {
        reexec_for_nccl();
    }
    let code = match args.command {
        cli::Command::Validate(a) => cmd_plan::validate(&a),
        cli::Command::Plan(a) => cmd_plan::plan(&a),
        cli::Command::Run(a) => cmd_run::run(&a),
        cli::Command::Collate(a) => cmd_collate::collate(&a),
        cli::Command::Observe(a) => cmd_observe::observe(&a),
        cli::Command::Calibrate(a) => calibrate(&a),
        cli::Command::Preflight(a) => cmd_preflight::preflight(&a),
        cli::Command::HealthDiff(a) => cmd_preflight::health_diff(&a),
        cli::Command::Compare(a) => cmd_compare::compare(&a),
        cli::Command::Predict(a) => cmd_predict::predict(&a),
        cli::Command::Import(a) => recording::import_cmd(&a),
        c @ (cli::Command::Completions(_) | cli::Command::Manpage(_)) => generate(&c),
    };
    match code {
        Ok(c) => std::process::exit(c),
        Err(e) => {
            errln!("error: {e:#}");
            std::process::exit(exit::ERROR);
        }
    }
}
