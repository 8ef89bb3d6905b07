#!/usr/bin/env bash
# Rack tests under real Slurm: a one-machine cluster (munged, slurmctld,
# slurmd, started here and stopped on exit) runs
# crates/powerlab/tests/slurm.rs with the `mpi` feature: batch jobs
# (`sbatch --wait`), direct `srun` steps, one rank per GPU and several GPUs
# per rank, `scancel` and an expired time limit mid-rung.
#
# MPI plugin: `srun --mpi=pmix`. Debian bookworm's Slurm 22.05 offers
# pmix (PMIx v4, against libpmix2 4.2), pmi2, cray_shasta and none
# (`srun --mpi=list`, printed below). Debian's Open MPI 4.1 is built against
# that same external PMIx, so its ranks wire up through slurmd's PMIx
# server. It is not built with Slurm's PMI-1/PMI-2 support: under
# `srun --mpi=pmi2` every rank aborts in MPI_Init ("OMPI was not built with
# SLURM's PMI support"). POWERLAB_SLURM_MPI tells the tests which plugin.
#
# Everything lives in a temporary directory (munge key, slurm.conf from
# scripts/ci/slurm/slurm.conf.in, state, spool, logs); daemons are stopped
# by PID on exit, so the script can run again at once. Root in CI
# containers (or sudo for the packages). POWERLAB_SLURM_KEEP=1 keeps the
# directory for a look at the logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD

have_libclang() { ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' || ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; }
PKGS="slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge openmpi-bin libopenmpi-dev libclang-dev"
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
  || ! command -v srun >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1 \
  || ! command -v mpicc >/dev/null 2>&1 || ! have_libclang; then
  echo "installing Slurm, munge, Open MPI and libclang (Debian packages)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  $SUDO apt-get install -y --no-install-recommends $PKGS >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends $PKGS >/dev/null; }
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "error: ci-slurm.sh starts slurmd, which must run as root (run it as root, as CI containers do)" >&2
  exit 1
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/powerlab-slurm.XXXXXX")
chmod 755 "$DIR"
mkdir -p "$DIR"/{munge,munge-run,state,spool,run,log}
chmod 700 "$DIR/munge"
PIDS=()

logs() {
  local f
  for f in "$DIR"/log/*.log "$DIR"/munge/munged.log "$DIR"/log/*.out; do
    [ -s "$f" ] || continue
    # A daemon's console output only where it never opened its log.
    case $f in *.out) [ -s "${f%.out}.log" ] && continue ;; esac
    echo "----- $f (last 40 lines)" >&2
    tail -n 40 "$f" >&2
  done
}
# Processes other than our daemons with a file open in our directory:
# the job steps' slurmstepd (which slurmd starts detached) and what they
# run, by PID.
steps() {
  local p f mine
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    mine=0
    for f in "/proc/$p/fd/"*; do
      case $(readlink "$f" 2>/dev/null) in "$DIR"/*) mine=1; break ;; esac
    done
    [ "$mine" = 1 ] || continue
    # Not our daemons, nor their helpers (slurmctld's slurmscriptd).
    case " ${PIDS[*]} $$ $BASHPID " in *" $p "*) continue ;; esac
    case " ${PIDS[*]} " in *" $(ps -o ppid= -p "$p" | tr -d ' ') "*) continue ;; esac
    echo "$p"
  done
}
cleanup() {
  local rc=$?
  set +e
  # Jobs first (their steps run under slurmstepd, not a child of ours),
  # then the daemons we started, newest first, by PID, then any step
  # daemon still holding a file of ours.
  if [ ${#PIDS[@]} -gt 1 ]; then
    scancel --full --quiet --partition=ci >/dev/null 2>&1
    for _ in $(seq 1 40); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && [ -z "$(steps)" ] && break
      sleep 0.5
    done
  fi
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${PIDS[i]}" 2>/dev/null
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  left=$(steps)
  if [ -n "$left" ]; then
    echo "stopping step daemons left behind: $(echo "$left" | tr '\n' ' ')" >&2
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
  fi
  if [ "$rc" -ne 0 ]; then logs; fi
  if [ "${POWERLAB_SLURM_KEEP:-0}" = 1 ]; then
    echo "kept $DIR" >&2
  else
    rm -rf "$DIR"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "error: $*" >&2
  exit 1
}

# munge: a fresh key, a socket of our own.
SOCK="$DIR/munge-run/munge.socket.2"
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
munged -F --force --key-file="$DIR/munge/munge.key" --socket="$SOCK" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
  --seed-file="$DIR/munge/munged.seed" >"$DIR/log/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
munge -n -S "$SOCK" | unmunge -S "$SOCK" >/dev/null \
  || fail "munged did not start: no credential could be encoded and decoded through $SOCK"

# slurm.conf for this host.
HOST=$(hostname -s)
CTLD_PORT=${POWERLAB_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${POWERLAB_SLURMD_PORT:-16818}
for port in "$CTLD_PORT" "$SLURMD_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "port $port is in use (a Slurm daemon left from an earlier run?); set POWERLAB_SLURMCTLD_PORT / POWERLAB_SLURMD_PORT"
  fi
done
sed -e "s|@DIR@|$DIR|g" -e "s|@HOST@|$HOST|g" -e "s|@USER@|$(id -un)|g" \
  -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
  scripts/ci/slurm/slurm.conf.in >"$DIR/slurm.conf"
export SLURM_CONF="$DIR/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$DIR/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" >"$DIR/log/slurmd.out" 2>&1 &
PIDS+=($!)

# Up when the node is idle.
state=""
for _ in $(seq 1 120); do
  state=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  for pid in "${PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || fail "a Slurm daemon (pid $pid) exited while starting; its log is below"
  done
  sleep 0.5
done
[ "$state" = idle ] || fail "node $HOST is not idle after 60 s (sinfo says '${state:-nothing}'); the daemons' logs are below"
sinfo --version
echo "MPI plugins: $(srun --mpi=list 2>&1 | tr '\n' ' ')"
srun --mpi=list 2>&1 | grep -qw pmix || fail "this Slurm has no mpi/pmix plugin (srun --mpi=list); install slurm-wlm-basic-plugins"

# The tests: the same cargo invocation as ci-mpi.sh, so nothing rebuilds.
export POWERLAB_SLURM=1 POWERLAB_SLURM_MPI=pmix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$REPO"
cargo test --locked -p powerlab --features mpi --test main slurm:: -- --test-threads 1
