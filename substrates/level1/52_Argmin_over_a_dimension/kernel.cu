// NVRTC has no <math.h>: define INFINITY where the compiler does not already.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Argmin over one dimension. The input is viewed as (outer, R, inner) with R the reduced
// dimension; one thread per output element (o, j) scans its R values, which lie `inner` apart,
// so neighbouring threads read neighbouring addresses. First occurrence wins ties (strict <),
// and the first NaN wins as in torch.argmin. Output is int64.
extern "C" __global__ void argmin_dim(const float* __restrict__ x, long long* __restrict__ out,
                                      long long n, int R, long long inner) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long o = i / inner;
        long long j = i - o * inner;
        const float* base = x + o * R * inner + j;
        float best = INFINITY;
        int best_r = 0;
        for (int r = 0; r < R; ++r) {
            float v = base[(long long)r * inner];
            if (v < best || (v != v && best == best)) {
                best = v;
                best_r = r;
            }
        }
        out[i] = (long long)best_r;
    }
}
