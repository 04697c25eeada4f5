// NVRTC has no <math.h>: define INFINITY where the compiler does not already.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Min over one dimension (the values of torch.min(x, dim)). The input is viewed as
// (outer, R, inner) with R the reduced dimension; one thread per output element (o, j) scans its
// R values, which lie `inner` apart, so neighbouring threads read neighbouring addresses.
// A NaN propagates, as in torch.min.
extern "C" __global__ void min_dim(const float* __restrict__ x, float* __restrict__ out,
                                   long long n, int R, long long inner) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long o = i / inner;
        long long j = i - o * inner;
        const float* base = x + o * R * inner + j;
        float best = INFINITY;
        for (int r = 0; r < R; ++r) {
            float v = base[(long long)r * inner];
            if (v < best || v != v) {
                best = v;
            }
        }
        out[i] = best;
    }
}
