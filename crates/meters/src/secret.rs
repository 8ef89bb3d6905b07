//! Credentials, from an environment variable or a file; never from the
//! campaign, never printed.

use powerlab_core::MeterError;

/// A password held in memory; its `Debug` shows nothing.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// From the variable `env` or the first line of `file`.
    pub(crate) fn load(env: Option<&str>, file: Option<&str>) -> Result<Secret, MeterError> {
        if let Some(var) = env {
            // Only a variable declared for powerlab (the campaign's parser
            // refuses any other; a spec built elsewhere is held to it too).
            if !var.starts_with(powerlab_campaign::reach::SECRET_ENV_PREFIX) {
                return Err(MeterError::Config(format!(
                    "the password variable `{var}` is not named {}*: powerlab reads a password only from a variable declared for it",
                    powerlab_campaign::reach::SECRET_ENV_PREFIX
                )));
            }
            return match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(Secret(v)),
                _ => Err(MeterError::Config(format!(
                    "the password variable `{var}` is not set: export it before the run"
                ))),
            };
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                MeterError::Config(format!("cannot read the password file `{path}`: {e}"))
            })?;
            let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
            if line.is_empty() {
                return Err(MeterError::Config(format!(
                    "the password file `{path}` is empty"
                )));
            }
            return Ok(Secret(line.to_string()));
        }
        Err(MeterError::Config(
            "no password_env or password_file given".into(),
        ))
    }
}
