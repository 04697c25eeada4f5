// Matrix-vector product: out = A @ x, A (M, K), x (K, 1), out (M, 1).
// Rows are long (K ~ 1e6), so each row is split into chunks: pass 1 gives every (row, chunk) its own
// block, which sums the chunk with a shared-memory tree; pass 2 tree-sums each row's chunk partials.
#define BLOCK 256

extern "C" __global__ void gemv_partial(const float* __restrict__ A, const float* __restrict__ x,
                                        float* __restrict__ partial, int M, long long K,
                                        int nchunks, int chunk) {
    __shared__ float sdata[BLOCK];
    int row = blockIdx.x / nchunks;
    int c = blockIdx.x % nchunks;
    long long kbeg = (long long)c * chunk;
    long long kend = kbeg + chunk;
    if (kend > K) kend = K;
    float acc = 0.0f;
    if (row < M) {
        for (long long j = kbeg + threadIdx.x; j < kend; j += blockDim.x) {
            acc += A[(long long)row * K + j] * x[j];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0 && row < M) {
        partial[(long long)row * nchunks + c] = sdata[0];
    }
}

extern "C" __global__ void gemv_finish(const float* __restrict__ partial, float* __restrict__ out,
                                       int M, int nchunks) {
    __shared__ float sdata[BLOCK];
    int row = blockIdx.x;
    float acc = 0.0f;
    if (row < M) {
        for (int c = threadIdx.x; c < nchunks; c += blockDim.x) {
            acc += partial[(long long)row * nchunks + c];
        }
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0 && row < M) {
        out[row] = sdata[0];
    }
}
