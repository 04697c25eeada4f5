// GroupNorm: each (n, group) is a contiguous segment of (C / G) * H * W elements, normalised by
// its mean and biased variance (two passes, fp32), then scaled per channel by weight and bias.
// Each statistic is a multi-block reduction: segment_partial_* sums one chunk of one segment per
// block into a scratch buffer, segment_* reduces a segment's partials with a tree.

// partial[seg * parts + part] = sum of x over chunk `part` of segment `seg`
extern "C" __global__ void segment_partial_sum(const float* __restrict__ x, float* __restrict__ partial,
                                               long long seg_len, int parts, long long chunk) {
    __shared__ float sdata[256];
    long long seg = blockIdx.x / parts;
    long long part = blockIdx.x % parts;
    long long start = part * chunk;
    long long end = start + chunk;
    if (end > seg_len) end = seg_len;
    const float* base = x + seg * seg_len;
    float acc = 0.0f;
    for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
        acc += base[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sdata[0];
}

// mean[seg] = (sum of the segment's partials) / seg_len; one block per segment
extern "C" __global__ void segment_mean(const float* __restrict__ partial, float* __restrict__ mean,
                                        int parts, long long seg_len) {
    __shared__ float sdata[256];
    long long seg = blockIdx.x;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < parts; j += blockDim.x) {
        acc += partial[seg * parts + j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) mean[seg] = sdata[0] / (float)seg_len;
}

// partial[seg * parts + part] = sum of (x - mean[seg])^2 over that chunk
extern "C" __global__ void segment_partial_sqdev(const float* __restrict__ x, const float* __restrict__ mean,
                                                 float* __restrict__ partial, long long seg_len,
                                                 int parts, long long chunk) {
    __shared__ float sdata[256];
    long long seg = blockIdx.x / parts;
    long long part = blockIdx.x % parts;
    long long start = part * chunk;
    long long end = start + chunk;
    if (end > seg_len) end = seg_len;
    const float* base = x + seg * seg_len;
    float m = mean[seg];
    float acc = 0.0f;
    for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
        float d = base[j] - m;
        acc += d * d;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sdata[0];
}

// invstd[seg] = 1 / sqrt(biased variance + eps); one block per segment
extern "C" __global__ void segment_invstd(const float* __restrict__ partial, float* __restrict__ invstd,
                                          int parts, long long seg_len, float eps) {
    __shared__ float sdata[256];
    long long seg = blockIdx.x;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < parts; j += blockDim.x) {
        acc += partial[seg * parts + j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) invstd[seg] = rsqrtf(sdata[0] / (float)seg_len + eps);
}

// y = (x - mean[seg]) * invstd[seg] * weight[c] + bias[c], seg = n * G + g
extern "C" __global__ void group_norm_apply(const float* __restrict__ x, const float* __restrict__ mean,
                                            const float* __restrict__ invstd, const float* __restrict__ weight,
                                            const float* __restrict__ bias, float* __restrict__ y,
                                            long long n, int channels, long long plane_len, long long seg_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long seg = i / seg_len;
        int c = (int)((i / plane_len) % channels);
        y[i] = (x[i] - mean[seg]) * invstd[seg] * weight[c] + bias[c];
    }
}
