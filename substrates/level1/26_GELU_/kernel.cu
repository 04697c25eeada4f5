// GELU, exact erf form, elementwise over a flat range.
extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ out,
                                long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
