"""Reference all-reduce bus bandwidth from PyTorch (torch.distributed, NCCL
backend) on every visible GPU, one process per GPU, to compare with the
powerlab NCCL sweep run on the same GPUs.

usage: python3 scripts/device/torch_allreduce_ref.py [bytes ...]   (default 1 GiB)
Prints one JSON line per size: bytes, ranks, time_us (slowest rank), algbw,
busbw (GB/s, nccl-tests formula 2(n-1)/n).
"""
import json, os, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WARMUP, ITERS = 5, 20


def worker(rank, world, sizes, port, q):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    out = []
    for nbytes in sizes:
        x = torch.rand(nbytes // 4, dtype=torch.float32, device="cuda") * 2 - 1
        for _ in range(WARMUP):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(ITERS):
            dist.all_reduce(x)
        b.record()
        b.synchronize()
        t = torch.tensor([a.elapsed_time(b) * 1e3 / ITERS], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        out.append((nbytes, t.item()))
        del x
    if rank == 0:
        q.put(out)
    dist.destroy_process_group()


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [1 << 30]
    world = torch.cuda.device_count()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, world, sizes, port, q)) for r in range(world)]
    for p in procs:
        p.start()
    res = q.get(timeout=300)
    for p in procs:
        p.join()
    for nbytes, t_us in res:
        alg = nbytes / (t_us * 1e3)
        bus = alg * (2 * (world - 1) / world if world > 1 else 1.0)
        print(json.dumps({"ref": "torch.distributed.all_reduce", "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())), "bytes": nbytes, "ranks": world, "time_us": round(t_us, 2), "algbw_gbs": round(alg, 2), "busbw_gbs": round(bus, 2)}))


if __name__ == "__main__":
    main()
