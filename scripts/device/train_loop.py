#!/usr/bin/env python3
"""A real PyTorch training loop to stand in for a user's training command:
a decoder-only transformer (default 12 layers, d_model 1536, 12 heads,
FF 4x, vocab 32000, seq 1024, tied embeddings: 390,540,288 parameters),
fp32 master weights under bf16 autocast, fused AdamW, gradient clipping,
causal LM loss on synthetic random tokens generated on the GPU, attention
through F.scaled_dot_product_attention.

Iteration shapes (--shape):
  back_to_back  one step after another, no wait;
  idle_wait     step, then sleep (CPU, GPU idle) until --iteration-ms since
                the iteration started;
  busy_wait     step, then device-to-device HBM copies of a --copy-gib GiB
                buffer (random bytes), synchronised one by one, until
                --iteration-ms since the iteration started;
  accumulate    --accum forward/backward micro-steps, one optimizer step,
                then --idle-ms of sleep.
A "step" (step_ms) is the compute part: micro-step(s) + optimizer step, up
to a torch.cuda.synchronize(); an iteration (iteration_ms) adds the wait.
Iterations are chained: the next one starts where the last one ended.

SIGTERM / SIGINT set a flag; the loop stops at the next micro-step, copy or
50 ms slice of sleep (well under 1 s), writes --json and exits 0. A summary
line is printed about every 2 s.

    usage: train_loop.py [--shape back_to_back|idle_wait|busy_wait|accumulate]
                         [--iteration-ms T] [--accum N] [--idle-ms MS]
                         [--batch B] [--duration-s S] [--until-s S] [--warmup-steps W]
                         [--json PATH] [--layers --d-model --heads --vocab --seq]

Read-only towards the GPU's settings: it changes no clock, power limit,
persistence or compute mode and resets nothing; it only computes.
"""
import signal
import time

# The process's start, before any import: --until-s counts from here.
T_START = time.perf_counter()
STOP = False


def _on_signal(signum, frame):
    global STOP
    STOP = True


# Installed before torch is imported (which takes seconds), so that a
# signal that early still ends the run cleanly with exit status 0.
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SUMMARY_EVERY_S = 2.0
SLEEP_SLICE_S = 0.05


def expected_params(vocab, seq, d, layers, ff):
    """Parameter count of GPT below by formula: token + position embeddings,
    per layer qkv (3d^2) + out proj (d^2) + MLP (2 d ff) + 2 LayerNorms (4d),
    the final LayerNorm (2d); the LM head is tied to the token embedding."""
    return vocab * d + seq * d + layers * (4 * d * d + 2 * d * ff + 4 * d) + 2 * d


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff, bias=False)
        self.fc2 = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (b, heads, t, hd)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, d, layers, heads, ff):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


class Trainer:
    def __init__(self, args, dev):
        self.a = args
        self.dev = dev
        self.model = GPT(args.vocab, args.seq, args.d_model, args.layers, args.heads,
                         4 * args.d_model).to(dev)
        kw = dict(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
        try:
            self.opt = torch.optim.AdamW(self.model.parameters(), fused=True, **kw)
        except (TypeError, RuntimeError):
            self.opt = torch.optim.AdamW(self.model.parameters(), **kw)
        self.loss = None

    def micro_step(self, scale):
        a = self.a
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=self.dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = self.model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), tokens[:, 1:].reshape(-1))
        (loss * scale).backward()
        self.loss = loss.detach()

    def optimizer_step(self):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def step(self, micro=1):
        """micro forward/backward passes and one optimizer step, synchronised.
        False if a signal cut the accumulation short (no optimizer step)."""
        for _ in range(micro):
            self.micro_step(1.0 / micro)
            if STOP:
                torch.cuda.synchronize(self.dev)
                return False
        self.optimizer_step()
        torch.cuda.synchronize(self.dev)
        return True


def sleep_until(deadline):
    while not STOP:
        left = deadline - time.perf_counter()
        if left <= 0:
            return
        time.sleep(min(left, SLEEP_SLICE_S))


def copy_until(deadline, src, dst, dev):
    copies = 0
    while not STOP and time.perf_counter() < deadline:
        dst.copy_(src)
        torch.cuda.synchronize(dev)
        copies += 1
    return copies


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="back_to_back",
                    choices=["back_to_back", "idle_wait", "busy_wait", "accumulate"])
    ap.add_argument("--iteration-ms", type=float, default=None,
                    help="idle_wait/busy_wait: iteration length, ms since its start")
    ap.add_argument("--iteration-factor", type=float, default=None,
                    help="idle_wait/busy_wait: iteration length as this multiple of the median "
                         "warm-up step (in place of --iteration-ms: the shape holds whatever the "
                         "step takes on this GPU)")
    ap.add_argument("--accum", type=int, default=4, help="accumulate: micro-steps per optimizer step")
    ap.add_argument("--idle-ms", type=float, default=1000.0, help="accumulate: idle after the optimizer step")
    ap.add_argument("--batch", type=int, default=20,
                    help="sequences per micro-step (20 x 1024 tokens: ~50 TFLOP a step, "
                         "~120-160 ms on an H200 at 30-40 %% MFU; read the printed step ms)")
    ap.add_argument("--duration-s", type=float, default=None,
                    help="stop this long after the shaped loop starts (default: until signalled)")
    ap.add_argument("--until-s", type=float, default=None,
                    help="stop at the first iteration that would start this long after the "
                         "process started (its imports, model and warm-up included): an end at a "
                         "known time from the spawn, as a workload phase's stop = \"exit\" needs")
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--copy-gib", type=float, default=2.0, help="busy_wait: size of the copied buffer")
    ap.add_argument("--json", default=None, help="write the run's timings here at the end")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.shape in ("idle_wait", "busy_wait") and not (a.iteration_ms or a.iteration_factor):
        ap.error(f"--shape {a.shape} needs --iteration-ms or --iteration-factor")
    if a.d_model % a.heads:
        ap.error("--d-model must be a multiple of --heads")
    if a.accum < 1:
        ap.error("--accum must be >= 1")
    return a


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def main():
    a = parse()
    dev = torch.device(a.device)
    torch.cuda.set_device(dev)
    torch.manual_seed(a.seed)
    ff = 4 * a.d_model
    tr = Trainer(a, dev)
    n_params = sum(p.numel() for p in tr.model.parameters())  # tied weight counted once
    formula = expected_params(a.vocab, a.seq, a.d_model, a.layers, ff)
    print(f"[train] {torch.cuda.get_device_name(dev)}, torch {torch.__version__}; "
          f"params {n_params:,} (formula {formula:,}); layers {a.layers} d_model {a.d_model} "
          f"heads {a.heads} ff {ff} vocab {a.vocab} seq {a.seq} batch {a.batch}; shape {a.shape}",
          flush=True)

    src = dst = None
    if a.shape == "busy_wait" and not STOP:
        n = int(a.copy_gib * 2**30)
        src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=dev)  # real bits toggle in HBM
        dst = torch.empty_like(src)

    warm = []
    for _ in range(a.warmup_steps):
        if STOP:
            break
        t0 = time.perf_counter()
        tr.step(1)
        warm.append((time.perf_counter() - t0) * 1e3)
    if warm:
        print(f"[train] warmup {len(warm)} steps: " + " ".join(f"{x:.1f}" for x in warm) + " ms",
              flush=True)

    micro = a.accum if a.shape == "accumulate" else 1
    if a.iteration_factor and warm:
        # The first warm-up steps compile and allocate: the median of the rest.
        tail = sorted(warm[len(warm) // 2:])
        a.iteration_ms = a.iteration_factor * tail[len(tail) // 2]
        print(f"[train] iteration {a.iteration_ms:.1f} ms = {a.iteration_factor} x the median "
              f"warm-up step {tail[len(tail) // 2]:.1f} ms", flush=True)
    target_s = (a.iteration_ms or 0.0) / 1e3
    step_ms, iter_ms, iter_start_unix = [], [], []
    overruns = copies = 0
    torch.cuda.synchronize(dev)
    perf0, unix0 = time.perf_counter(), time.time()
    deadline = perf0 + a.duration_s if a.duration_s else None
    if a.until_s is not None:
        until = T_START + a.until_s
        deadline = until if deadline is None else min(deadline, until)
    last_print, printed_upto = perf0, 0
    start = perf0
    stopped_by = "signal"
    while not STOP:
        if deadline is not None and start >= deadline:
            stopped_by = "duration"
            break
        if not tr.step(micro):
            break
        t_step = time.perf_counter()
        if a.shape == "idle_wait":
            overruns += t_step - start > target_s
            sleep_until(start + target_s)
        elif a.shape == "busy_wait":
            overruns += t_step - start > target_s
            copies += copy_until(start + target_s, src, dst, dev)
        elif a.shape == "accumulate":
            sleep_until(t_step + a.idle_ms / 1e3)
        end = time.perf_counter()
        step_ms.append((t_step - start) * 1e3)
        iter_ms.append((end - start) * 1e3)
        iter_start_unix.append(unix0 + (start - perf0))
        start = end
        if end - last_print >= SUMMARY_EVERY_S:
            print(f"[train] t {end - perf0:7.1f} s  iters {len(iter_ms):6d}  "
                  f"step {mean(step_ms[printed_upto:]):7.1f} ms  "
                  f"iteration {mean(iter_ms[printed_upto:]):7.1f} ms  "
                  f"loss {tr.loss.item():.3f}" + (f"  overruns {overruns}" if overruns else ""),
                  flush=True)
            last_print, printed_upto = end, len(iter_ms)
    end_unix = unix0 + (time.perf_counter() - perf0)

    print(f"[train] done ({stopped_by}): {len(iter_ms)} iterations, step {mean(step_ms):.1f} ms, "
          f"iteration {mean(iter_ms):.1f} ms, overruns {overruns}", flush=True)
    if a.json:
        out = {
            "params": n_params, "params_formula": formula,
            "config": {"layers": a.layers, "d_model": a.d_model, "heads": a.heads, "ff": ff,
                       "vocab": a.vocab, "seq": a.seq, "batch": a.batch,
                       "precision": "fp32 master weights, bf16 autocast", "optimizer": "AdamW"},
            "device_name": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "shape": a.shape, "iteration_ms_target": a.iteration_ms,
            "accum": micro, "idle_ms": a.idle_ms if a.shape == "accumulate" else None,
            "copy_gib": a.copy_gib if a.shape == "busy_wait" else None, "copies": copies,
            "warmup_step_ms": warm, "iterations": len(iter_ms), "overruns": overruns,
            "step_ms": step_ms, "iteration_ms": iter_ms, "iteration_start_unix": iter_start_unix,
            "start_unix": unix0, "end_unix": end_unix, "stopped_by": stopped_by,
        }
        with open(a.json, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
