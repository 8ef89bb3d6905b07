#!/usr/bin/env python3
"""Issue 59's device check: a workload that escapes its process group.

    contain_job.py parent   loads the GPU with a bf16 matmul loop, after
                            starting a child through `setsid env -i`: a new
                            session, an empty environment (no
                            POWERLAB_WORKLOAD token). With CONTAIN_MODE=keep
                            (the default) the child is given back the
                            CUDA_VISIBLE_DEVICES the harness set; with
                            CONTAIN_MODE=bare it gets none (it then sees
                            every GPU). SIGTERM ends the parent with 0.
    contain_job.py child    loads the GPU the same way, forever, and
                            ignores SIGTERM: only a kill ends it.

Each prints its pid, session and cgroup. Read-only towards the GPU's
settings: it changes no clock, power limit, persistence or compute mode and
resets nothing; it only computes.
"""
import importlib.util
import os
import signal
import subprocess
import sys
import time

STOP = False


def on_term(signum, frame):
    global STOP
    STOP = True


def describe(role):
    cg = open("/proc/self/cgroup").read().strip().replace("\n", " | ")
    print(f"{role}: pid {os.getpid()} sid {os.getsid(0)} pgid {os.getpgid(0)} "
          f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} "
          f"POWERLAB_WORKLOAD={os.environ.get('POWERLAB_WORKLOAD')!r} cgroup {cg}", flush=True)


def load(role):
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    n, t0 = 0, time.time()
    while not STOP:
        for _ in range(20):
            a = (a @ b).clamp_(-1, 1)
        torch.cuda.synchronize()
        n += 20
        if time.time() - t0 > 5:
            print(f"{role}: {n} matmuls", flush=True)
            t0 = time.time()


def main():
    role = sys.argv[1] if len(sys.argv) > 1 else "parent"
    if role == "child":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        describe("child")
        load("child")
        return
    signal.signal(signal.SIGTERM, on_term)
    describe("parent")
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("torch").origin))
    env = ["PYTHONPATH=" + site, "PYTHONUNBUFFERED=1"]
    if os.environ.get("CONTAIN_MODE", "keep") == "keep":
        env.append("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    child = subprocess.Popen(["setsid", "env", "-i", *env, sys.executable, os.path.abspath(__file__), "child"])
    print(f"parent: started child {child.pid} through setsid env -i", flush=True)
    load("parent")
    print("parent: SIGTERM, exiting 0", flush=True)


if __name__ == "__main__":
    main()
