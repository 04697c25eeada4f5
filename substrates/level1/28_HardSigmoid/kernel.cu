// HardSigmoid: relu6(x + 3) / 6, elementwise.
extern "C" __global__ void hardsigmoid(const float* __restrict__ x, float* __restrict__ out,
                                       long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    }
}
