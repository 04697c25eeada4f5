// Argmax over the middle axis of x viewed as (outer, reduce, inner); out is (outer, inner), int64.
// One thread per output element, walking the reduce axis with stride `inner`.
// Torch's rules: the first maximum wins a tie, and NaN counts as the maximum (first NaN wins).

extern "C" __global__ void argmax_mid(const float* __restrict__ x, long long* __restrict__ out,
                                      long long n, int reduce, int inner) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long o = i / inner;
        long long c = i % inner;
        const float* base = x + o * reduce * inner + c;
        float best = -INFINITY;
        long long best_idx = 0;
        for (int r = 0; r < reduce; ++r) {
            float v = base[(long long)r * inner];
            // strict > keeps the first of equal values; a NaN replaces anything but an earlier NaN
            if (v > best || (isnan(v) && !isnan(best))) {
                best = v;
                best_idx = r;
            }
        }
        out[i] = best_idx;
    }
}
