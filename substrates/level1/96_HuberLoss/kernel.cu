// Smooth L1 (Huber) loss with threshold beta, mean over every element, to a 0-dim output: with
// d = predictions - targets, each element adds 0.5 * d^2 / beta where |d| < beta, else |d| - 0.5 * beta.
// Stage 1: each block sums the per-element losses of a grid-stride slice (fp32 per thread), then a
// shared-memory tree, into one partial per block. Stage 2 sums the partials. Block size 256.

extern "C" __global__ void smooth_l1_partial(const float* __restrict__ pred, const float* __restrict__ targ,
                                             float* __restrict__ partial, long long n, float beta) {
    __shared__ float sdata[256];
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        float z = fabsf(pred[i] - targ[i]);
        acc += (z < beta) ? 0.5f * z * z / beta : z - 0.5f * beta;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}

// Stage 2: one block sums the partials with a tree and divides by count (the mean's denominator).
extern "C" __global__ void mean_finish(const float* __restrict__ partial, float* __restrict__ out,
                                       int num_partials, long long count) {
    __shared__ float sdata[256];
    float acc = 0.0f;
    for (int j = threadIdx.x; j < num_partials; j += blockDim.x) {
        acc += partial[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = sdata[0] / (float)count;
    }
}
