// Sigmoid, elementwise over a flat range: 1 / (1 + exp(-x)).
extern "C" __global__ void sigmoid(const float* __restrict__ x, float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = 1.0f / (1.0f + expf(-v));
    }
}
