// diag(A) @ B, i.e. row r of B scaled by A[r]: C[r, c] = A[r] * B[r, c], A (N,), B (N, M).
extern "C" __global__ void diag_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, long long n, int M) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long r = i / M;
        C[i] = A[r] * B[i];
    }
}
