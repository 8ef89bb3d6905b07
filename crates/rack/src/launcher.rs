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
}
