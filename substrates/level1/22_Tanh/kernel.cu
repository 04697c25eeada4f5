// Tanh, elementwise over a flat range.
extern "C" __global__ void tanh_act(const float* __restrict__ x, float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = tanhf(v);
    }
}
