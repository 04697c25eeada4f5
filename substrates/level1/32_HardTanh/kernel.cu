// HardTanh: clamp to [min_val, max_val], elementwise.
extern "C" __global__ void hardtanh(const float* __restrict__ x, float* __restrict__ out,
                                    long long n, float min_val, float max_val) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = fminf(fmaxf(v, min_val), max_val);
    }
}
