#!/usr/bin/env python3
"""What the level load (kernels/virus.cu burn_until on k blocks) draws on
this GPU, against a bf16 GEMM: each step held 1.5 s, the buffered NVML
samples (nvmlDeviceGetSamples, total power) of its last 0.8 s averaged.
Read-only towards GPU settings. usage: level_probe.py [gpu]"""
import sys, time
import cupy as cp
import pynvml as N

gpu = int(sys.argv[1]) if len(sys.argv) > 1 else 0
KS = [int(k) for k in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 2, 4, 8, 16, 33, 66, 132, 198, 264, 396, 528]
cp.cuda.Device(gpu).use()
N.nvmlInit()
h = N.nvmlDeviceGetHandleByIndex(gpu)
src = open("kernels/virus.cu").read()
mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=None)
burn = mod.get_function("burn_until")
sms = cp.cuda.Device(gpu).attributes["MultiProcessorCount"]
n4 = (1 << 28) // 16
a = cp.zeros(n4 * 4, dtype=cp.float32)
b = cp.zeros(n4 * 4, dtype=cp.float32)
out = cp.zeros(1, dtype=cp.uint64)
def gtime():
    t = cp.zeros(1, dtype=cp.uint64)
    k = cp.RawKernel(r'''extern "C" __global__ void g(unsigned long long* o){unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); *o=t;}''', "g")
    k((1,), (1,), (t,)); cp.cuda.Device().synchronize(); return int(t.get()[0])
limit = N.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
def samples_since(ts_us):
    try:
        _, s = N.nvmlDeviceGetSamples(h, N.NVML_TOTAL_POWER_SAMPLES, ts_us)
        return [(x.timeStamp, x.sampleValue.uiVal / 1000) for x in s]
    except N.NVMLError:
        return []
def step(name, run):
    t0 = time.time()
    run(1.5)
    cp.cuda.Device().synchronize()
    since = int((t0 + 0.7) * 1e6)
    s = [w for ts, w in samples_since(since) if ts >= since and ts <= (t0 + 1.5) * 1e6]
    m = sum(s) / len(s) if s else float('nan')
    print(f"{name:>12}  {m:7.1f} W  {100*m/limit:5.1f} % of {limit:.0f} W  (n={len(s)})", flush=True)
    return m
def burn_for(blocks):
    def r(sec):
        if blocks == 0:
            time.sleep(sec); return
        dl = gtime() + int(sec * 1e9)
        burn((blocks,), (256,), (cp.uint64(dl), a, b, cp.uint64(n4), out))
    return r
print(f"GPU {gpu}: {sms} SMs, limit {limit:.0f} W", flush=True)
step("idle", burn_for(0))
for k in KS:
    step(f"{k} blocks", burn_for(k))
n = 8192
x = cp.random.rand(n, n, dtype=cp.float32).astype(cp.float16)
def gemm(sec):
    t = time.time()
    while time.time() - t < sec:
        for _ in range(4):
            cp.matmul(x, x)
        cp.cuda.Device().synchronize()
step("gemm fp16", gemm)
step("idle", burn_for(0))
