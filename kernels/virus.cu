// Power-virus helper kernels, compiled at run time by NVRTC for the GPU's
// own architecture (sm_80 and newer: the mma kernel uses bf16 mma.sync).
// The main load is cuBLAS GEMM; these kernels place edges on the device
// clock and provide the memory and register-only load modes.

extern "C" __device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Two independent bf16 mma.sync m16n8k16 chains on register operands (no
// memory traffic): the tensor load of mma_regs and of burn_until's odd warps.
extern "C" __device__ __forceinline__ void mma_pair(float& c0, float& c1, float& c2, float& c3, float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a1), "r"(a0), "r"(a3), "r"(a2), "r"(b1), "r"(b0));
}

// Holds the stream until the device clock reaches `deadline` (ns), then
// records the time it let go. Work queued behind it starts at the deadline:
// this is how a rising edge is placed on the device, not by the host.
extern "C" __global__ void spin_until(unsigned long long deadline, unsigned long long* out) {
    unsigned long long t = global_ns();
    while (t < deadline) {
        t = global_ns();
    }
    *out = t;
}

// Records the device clock when the stream reaches it (after the work queued
// before it has finished): the achieved falling edge.
extern "C" __global__ void stamp(unsigned long long* out) {
    *out = global_ns();
}

// The last part of an on-phase: keeps the GPU busy until the device clock
// reaches `deadline`, then every thread returns, so the load stops at the
// deadline itself, not at the end of whichever GEMM chunk happened to be
// running: the falling edge is placed on the device, as the rising edge is
// by spin_until. Odd warps run bf16 mma.sync chains in registers, even
// warps stream HBM, all checking the clock every few hundred cycles: the
// two together draw more than either alone (HBM streaming alone held ~375 W
// on H200), so the stretch the host leaves to it for safety costs less of
// the on-phase's draw. Thread 0 of block 0 records when it let go.
extern "C" __global__ void burn_until(unsigned long long deadline, const float4* __restrict__ src, float4* __restrict__ dst, unsigned long long n, unsigned long long* out) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long t = global_ns();
    if ((threadIdx.x >> 5) & 1u) {
        t = __shfl_sync(0xffffffffu, t, 0);
        unsigned a0 = 0x3f803f80u ^ threadIdx.x, a1 = 0x3f813f81u, a2 = 0x3f823f82u, a3 = 0x3f833f83u ^ blockIdx.x;
        unsigned b0 = 0x3f843f84u, b1 = 0x3f853f85u ^ threadIdx.x;
        float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
        float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
        while (t < deadline) {
            for (int k = 0; k < 8; ++k) {
                mma_pair(c0, c1, c2, c3, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
            }
            // One clock for the whole warp: mma.sync.aligned needs every
            // lane to take the same path out of the loop.
            t = __shfl_sync(0xffffffffu, global_ns(), 0);
        }
        // Never true; keeps the chains from being removed.
        if (c0 + c1 + c2 + c3 + d0 + d1 + d2 + d3 == 12345.678f) {
            dst[i % n] = make_float4(c0, c1, d0, d1);
        }
        return;
    }
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    while (t < deadline) {
        float4 v = src[i];
        acc.x = fmaf(v.x, 1.0001f, acc.y);
        acc.y = fmaf(v.y, 0.9999f, acc.z);
        acc.z = fmaf(v.z, 1.0002f, acc.w);
        acc.w = fmaf(v.w, 0.9998f, acc.x);
        dst[i] = acc;
        i += stride;
        if (i >= n) i -= n;
        t = global_ns();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && out != 0) *out = t;
}

// HBM streaming load: reads and writes a large buffer with 16-byte accesses.
extern "C" __global__ void hbm_stream(const float4* __restrict__ src, float4* __restrict__ dst, unsigned long long n, int passes) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p) {
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            float4 v = src[i];
            v.x = v.x * 1.0001f + 1.0f;
            v.w = v.w * 0.9999f - 1.0f;
            dst[i] = v;
        }
    }
}

// Register-only tensor load: bf16 mma.sync m16n8k16 chains with no memory
// traffic. On H200 this alone draws ~75% of the limit: kept as a reference
// mode, not the default.
extern "C" __global__ void mma_regs(float* out, int iters) {
    unsigned a0 = 0x3f803f80u ^ threadIdx.x, a1 = 0x3f813f81u, a2 = 0x3f823f82u, a3 = 0x3f833f83u ^ blockIdx.x;
    unsigned b0 = 0x3f843f84u, b1 = 0x3f853f85u ^ threadIdx.x;
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    for (int i = 0; i < iters; ++i) {
        mma_pair(c0, c1, c2, c3, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
    }
    if (c0 + c1 + c2 + c3 + d0 + d1 + d2 + d3 == 12345.678f) {
        out[blockIdx.x * blockDim.x + threadIdx.x] = c0;
    }
}

// Fills a buffer with non-zero pseudo-random floats in [-1, 1): collectives
// over random data toggle the links and reduction units the way real
// gradients do, zeros would not.
extern "C" __global__ void fill_random(float* x, unsigned long long n, unsigned int seed) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned int h = (unsigned int)(i * 2654435761ull) ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        x[i] = (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f + 1.0e-7f;
    }
}
