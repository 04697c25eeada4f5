// Matrix times scalar, elementwise over a flat range: C = A * s.
extern "C" __global__ void scale(const float* __restrict__ A, float* __restrict__ C, long long n, float s) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        C[i] = A[i] * s;
    }
}
