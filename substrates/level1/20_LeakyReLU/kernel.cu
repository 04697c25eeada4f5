// LeakyReLU, elementwise over a flat range: x if x > 0 else x * negative_slope.
extern "C" __global__ void leaky_relu(const float* __restrict__ x, float* __restrict__ out,
                                      long long n, float negative_slope) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = v > 0.0f ? v : v * negative_slope;
    }
}
