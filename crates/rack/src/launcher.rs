//! Was this process started by an MPI launcher? Read from the environment
//! the launchers set, before MPI is touched, so that a single-node run never
//! loads an MPI library and a rack launch of a build without MPI fails with a
//! clear error instead of running N unrelated single-node campaigns.

/// A launch by mpirun / mpiexec / srun.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Which launcher's variables were found.
    pub launcher: &'static str,
    /// The variable that gave the world size, for messages.
    pub variable: &'static str,
    /// Processes in the job.
    pub world_size: usize,
}

/// Reads the launchers' variables through `env`.
pub fn detect(env: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let size = |v: &str| env(v).and_then(|s| s.trim().parse::<usize>().ok());
    let found = [
        ("Open MPI (mpirun)", "OMPI_COMM_WORLD_SIZE"),
        ("MPICH / Hydra (mpiexec)", "PMI_SIZE"),
        ("PMIx", "PMIX_SIZE"),
    ]
    .into_iter()
    .find_map(|(launcher, variable)| {
        size(variable).map(|world_size| Launch {
            launcher,
            variable,
            world_size,
        })
    });
    if found.is_some() {
        return found;
    }
    // srun sets SLURM_STEP_ID only for processes it starts itself (not for
    // the shell of an allocation).
    if env("SLURM_STEP_ID").is_some() {
        return size("SLURM_STEP_NUM_TASKS").map(|world_size| Launch {
            launcher: "Slurm (srun)",
            variable: "SLURM_STEP_NUM_TASKS",
            world_size,
        });
    }
    None
}

/// From the process environment.
pub fn detect_from_process() -> Option<Launch> {
    detect(|k| std::env::var(k).ok())
}

/// This process's place among the ranks the launcher started on its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPlace {
    /// Rank among the processes on this host (0-based).
    pub rank: usize,
    /// Processes on this host.
    pub size: usize,
    /// The variables that said so, for messages and the manifest.
    pub variables: &'static str,
}

/// Reads the local rank and the number of ranks on this host through `env`
/// (Open MPI, PMIx, MPICH/Hydra, Slurm); None when no launcher says both.
pub fn local_place(env: impl Fn(&str) -> Option<String>) -> Option<LocalPlace> {
    let num = |v: &str| env(v).and_then(|s| s.trim().parse::<usize>().ok());
    // Slurm's task count on this node: this node's entry (SLURM_NODEID) of
    // the step's layout, SLURM_STEP_TASKS_PER_NODE ("2(x3),1"), else of
    // SLURM_TASKS_PER_NODE (which srun sets to the step's layout too).
    // Never SLURM_NTASKS_PER_NODE: that is the job's request, inherited by
    // every step of a batch script whatever its own layout (`sbatch
    // --ntasks-per-node=8` then `srun -n 2` runs 2 ranks per node).
    let slurm_local_size = || {
        let node = num("SLURM_NODEID").unwrap_or(0);
        ["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]
            .into_iter()
            .find_map(|v| env(v).and_then(|s| slurm_tasks_on_node(&s, node)))
    };
    let place = |rank: Option<usize>, size: Option<usize>, variables| match (rank, size) {
        (Some(rank), Some(size)) if rank < size => Some(LocalPlace {
            rank,
            size,
            variables,
        }),
        _ => None,
    };
    place(
        num("OMPI_COMM_WORLD_LOCAL_RANK"),
        num("OMPI_COMM_WORLD_LOCAL_SIZE"),
        "OMPI_COMM_WORLD_LOCAL_RANK/OMPI_COMM_WORLD_LOCAL_SIZE",
    )
    .or_else(|| {
        place(
            num("PMIX_LOCAL_RANK"),
            num("PMIX_LOCAL_SIZE"),
            "PMIX_LOCAL_RANK/PMIX_LOCAL_SIZE",
        )
    })
    .or_else(|| {
        place(
            num("MPI_LOCALRANKID"),
            num("MPI_LOCALNRANKS"),
            "MPI_LOCALRANKID/MPI_LOCALNRANKS",
        )
    })
    .or_else(|| {
        place(
            num("SLURM_LOCALID"),
            slurm_local_size(),
            "SLURM_LOCALID/SLURM_STEP_TASKS_PER_NODE",
        )
    })
}

/// The task count of node `node` (0-based) in a Slurm layout such as
/// `2(x3),1` (three nodes of 2, then one of 1); None if the layout is
/// malformed or shorter.
pub fn slurm_tasks_on_node(layout: &str, node: usize) -> Option<usize> {
    let mut first = 0usize;
    for part in layout.split(',') {
        let part = part.trim();
        let (count, times) = match part.split_once('(') {
            Some((c, rest)) => (
                c.trim().parse::<usize>().ok()?,
                rest.strip_prefix('x')?
                    .strip_suffix(')')?
                    .trim()
                    .parse::<usize>()
                    .ok()?,
            ),
            None => (part.parse::<usize>().ok()?, 1),
        };
        if node < first + times {
            return Some(count);
        }
        first += times;
    }
    None
}

/// Which GPUs a rank drives when several ranks share a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// One rank on this host (or no launcher): the campaign's selector over
    /// every visible GPU.
    Whole,
    /// The launcher (or the user) set `CUDA_VISIBLE_DEVICES`: kept as given.
    Given {
        /// The variable's value.
        devices: String,
    },
    /// powerlab splits the host's GPUs evenly among its local ranks and
    /// sets `CUDA_VISIBLE_DEVICES` to this rank's share.
    Split {
        /// The devices this rank drives (`CUDA_VISIBLE_DEVICES`).
        devices: String,
        /// This rank's place on the host.
        place: LocalPlace,
    },
}

impl Binding {
    /// One line for the manifest, `rack.json` and messages.
    pub fn describe(&self) -> String {
        match self {
            Binding::Whole => "every visible GPU (one rank on this host)".into(),
            Binding::Given { devices } => {
                format!("CUDA_VISIBLE_DEVICES={devices}, as the launcher or the user set it")
            }
            Binding::Split { devices, place } => format!(
                "CUDA_VISIBLE_DEVICES={devices}: local rank {} of {} ({}) takes its even share of the host's GPUs",
                place.rank, place.size, place.variables
            ),
        }
    }
}

/// The binding of a rank: `CUDA_VISIBLE_DEVICES` if set, else an even
/// split of the host's `host_gpus` GPUs among its local ranks.
///
/// # Errors
/// The host's GPUs cannot be split evenly among its ranks (or there are
/// fewer GPUs than ranks): the message says how to launch instead.
pub fn binding(env: impl Fn(&str) -> Option<String>, host_gpus: usize) -> Result<Binding, String> {
    if let Some(devices) = env("CUDA_VISIBLE_DEVICES") {
        return Ok(Binding::Given { devices });
    }
    let Some(place) = local_place(&env).filter(|p| p.size > 1) else {
        return Ok(Binding::Whole);
    };
    if host_gpus == 0 || !host_gpus.is_multiple_of(place.size) {
        return Err(format!(
            "{} ranks were started on this host ({}), which has {host_gpus} GPUs: they cannot be split evenly. Start one rank per GPU, or one rank per host, or set CUDA_VISIBLE_DEVICES for each rank",
            place.size, place.variables
        ));
    }
    let per = host_gpus / place.size;
    let devices = (place.rank * per..(place.rank + 1) * per)
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",");
    Ok(Binding::Split { devices, place })
}

/// GPUs the NVIDIA driver lists on this host (`/proc/driver/nvidia/gpus`),
/// read without loading CUDA or NVML (so before any thread exists).
pub fn host_gpu_count() -> usize {
    std::fs::read_dir("/proc/driver/nvidia/gpus")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn launchers_are_recognised_by_their_variables() {
        assert_eq!(detect(env(&[])), None);
        assert_eq!(
            detect(env(&[("OMPI_COMM_WORLD_SIZE", "4")])).map(|l| l.world_size),
            Some(4)
        );
        assert_eq!(
            detect(env(&[("PMI_SIZE", "16")])).map(|l| l.launcher),
            Some("MPICH / Hydra (mpiexec)")
        );
        // An allocation's shell is not an srun step.
        assert_eq!(detect(env(&[("SLURM_STEP_NUM_TASKS", "8")])), None);
        assert_eq!(
            detect(env(&[
                ("SLURM_STEP_ID", "0"),
                ("SLURM_STEP_NUM_TASKS", "8")
            ]))
            .map(|l| l.world_size),
            Some(8)
        );
        assert_eq!(detect(env(&[("OMPI_COMM_WORLD_SIZE", "x")])), None);
    }

    #[test]
    fn local_places_come_from_each_launcher() {
        let ompi = env(&[
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert_eq!(local_place(&ompi).map(|p| (p.rank, p.size)), Some((1, 2)));
        let slurm = env(&[("SLURM_LOCALID", "3"), ("SLURM_TASKS_PER_NODE", "8(x2),4")]);
        assert_eq!(local_place(&slurm).map(|p| (p.rank, p.size)), Some((3, 8)));
        // This node's own entry of the layout: the third node runs 4.
        let third = env(&[
            ("SLURM_LOCALID", "3"),
            ("SLURM_NODEID", "2"),
            ("SLURM_TASKS_PER_NODE", "8(x2),4"),
        ]);
        assert_eq!(local_place(&third).map(|p| (p.rank, p.size)), Some((3, 4)));
        // A step of 2 ranks per node inside `sbatch --ntasks-per-node=8`:
        // the step's layout, not the job's request (as real Slurm sets them).
        let step = env(&[
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "0"),
            ("SLURM_NTASKS_PER_NODE", "8"),
            ("SLURM_TASKS_PER_NODE", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "2"),
        ]);
        assert_eq!(local_place(&step).map(|p| (p.rank, p.size)), Some((1, 2)));
        // The last node of an uneven layout runs its rank alone.
        let alone = env(&[
            ("SLURM_LOCALID", "0"),
            ("SLURM_NODEID", "1"),
            ("SLURM_STEP_TASKS_PER_NODE", "2,1"),
        ]);
        assert_eq!(local_place(&alone).map(|p| (p.rank, p.size)), Some((0, 1)));
        let pmix = env(&[("PMIX_LOCAL_RANK", "0"), ("PMIX_LOCAL_SIZE", "4")]);
        assert_eq!(local_place(&pmix).map(|p| p.size), Some(4));
        // A rank outside its own count is no place at all.
        let bad = env(&[("MPI_LOCALRANKID", "4"), ("MPI_LOCALNRANKS", "4")]);
        assert_eq!(local_place(&bad), None);
        assert_eq!(local_place(env(&[])), None);
    }

    #[test]
    fn slurm_layouts_are_read_node_by_node() {
        let l = "2(x3),1,4(x2)";
        let got: Vec<Option<usize>> = (0..7).map(|n| slurm_tasks_on_node(l, n)).collect();
        assert_eq!(
            got,
            [Some(2), Some(2), Some(2), Some(1), Some(4), Some(4), None]
        );
        assert_eq!(slurm_tasks_on_node("8", 0), Some(8));
        for bad in ["", "x", "2(3)", "2(x3", "a(x2)"] {
            assert_eq!(slurm_tasks_on_node(bad, 0), None, "{bad}");
        }
    }

    #[test]
    fn ranks_split_the_host_evenly_unless_devices_are_given() {
        let two = [
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ];
        match binding(env(&two), 8).unwrap() {
            Binding::Split { devices, .. } => assert_eq!(devices, "4,5,6,7"),
            other => panic!("{other:?}"),
        }
        match binding(env(&two), 2).unwrap() {
            Binding::Split { devices, .. } => assert_eq!(devices, "1"),
            other => panic!("{other:?}"),
        }
        let err = binding(env(&two), 3).unwrap_err();
        assert!(err.contains("cannot be split evenly"), "{err}");
        let mut given = two.to_vec();
        given.push(("CUDA_VISIBLE_DEVICES", "GPU-abc"));
        assert_eq!(
            binding(env(&given), 8).unwrap(),
            Binding::Given {
                devices: "GPU-abc".into()
            }
        );
        let alone = [
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
        ];
        assert_eq!(binding(env(&alone), 8).unwrap(), Binding::Whole);
    }
}
