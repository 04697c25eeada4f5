// Softshrink, elementwise over a flat range.
extern "C" __global__ void softshrink(const float* __restrict__ x, float* __restrict__ out,
                                      long long n, float lambd) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = v > lambd ? v - lambd : (v < -lambd ? v + lambd : 0.0f);
    }
}
