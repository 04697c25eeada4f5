// KL divergence kl_div(log(predictions), targets, reduction='batchmean'), to a 0-dim output: the sum
// over every element of xlogy(t, t) - t * log(p) (xlogy(t, t) = 0 where t == 0, as torch's kl_div),
// divided by the batch size. Stage 1: each block sums a grid-stride slice (fp32 per thread), then a
// shared-memory tree, into one partial per block. Stage 2 sums the partials. Block size 256.

extern "C" __global__ void kl_div_partial(const float* __restrict__ pred, const float* __restrict__ targ,
                                          float* __restrict__ partial, long long n) {
    __shared__ float sdata[256];
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        float t = targ[i];
        float t_log_t = (t == 0.0f) ? 0.0f : t * logf(t);
        acc += t_log_t - t * logf(pred[i]);
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
