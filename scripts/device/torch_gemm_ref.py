"""Reference load: a cuBLAS FP16 8192^3 GEMM loop from PyTorch on every GPU
at once, for comparison with the power virus in the same run."""
import sys, time, threading
import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
n = 8192

def burn(dev):
    torch.cuda.set_device(dev)
    a = torch.randn(n, n, device=dev, dtype=torch.float16)
    b = torch.randn(n, n, device=dev, dtype=torch.float16)
    end = time.time() + seconds
    iters = 0
    while time.time() < end:
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize(dev)
        iters += 8
    tflops = 2 * n**3 * iters / seconds / 1e12
    print(f"torch gpu{dev}: {iters} GEMMs, {tflops:.0f} TFLOP/s")

threads = [threading.Thread(target=burn, args=(d,)) for d in range(torch.cuda.device_count())]
for t in threads: t.start()
for t in threads: t.join()
