// BatchNorm2d in training mode: per-channel batch mean and biased variance over (N, H, W),
// two passes in fp32, each a multi-block reduction: plane_partial_* sums one chunk of one
// (n, c) plane per block into a scratch buffer, channel_* reduces a channel's partials with a
// tree, then batch_norm_apply normalises elementwise with the affine weight and bias.

// partial[plane * parts + part] = sum of x over chunk `part` of plane `plane` (plane = n * C + c)
extern "C" __global__ void plane_partial_sum(const float* __restrict__ x, float* __restrict__ partial,
                                             long long plane_len, int parts, long long chunk) {
    __shared__ float sdata[256];
    long long plane = blockIdx.x / parts;
    long long part = blockIdx.x % parts;
    long long start = part * chunk;
    long long end = start + chunk;
    if (end > plane_len) end = plane_len;
    const float* base = x + plane * plane_len;
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

// mean[c] = (sum over n, part of partial[(n * C + c) * parts + part]) / count; one block per channel
extern "C" __global__ void channel_mean(const float* __restrict__ partial, float* __restrict__ mean,
                                        int batch, int channels, int parts, long long count) {
    __shared__ float sdata[256];
    int c = blockIdx.x;
    long long terms = (long long)batch * parts;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < terms; j += blockDim.x) {
        long long n = j / parts;
        long long p = j % parts;
        acc += partial[(n * channels + c) * parts + p];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) mean[c] = sdata[0] / (float)count;
}

// partial[plane * parts + part] = sum of (x - mean[c])^2 over that chunk
extern "C" __global__ void plane_partial_sqdev(const float* __restrict__ x, const float* __restrict__ mean,
                                               float* __restrict__ partial, long long plane_len,
                                               int channels, int parts, long long chunk) {
    __shared__ float sdata[256];
    long long plane = blockIdx.x / parts;
    long long part = blockIdx.x % parts;
    long long start = part * chunk;
    long long end = start + chunk;
    if (end > plane_len) end = plane_len;
    const float* base = x + plane * plane_len;
    float m = mean[plane % channels];
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

// invstd[c] = 1 / sqrt(biased variance + eps); one block per channel
extern "C" __global__ void channel_invstd(const float* __restrict__ partial, float* __restrict__ invstd,
                                          int batch, int channels, int parts, long long count, float eps) {
    __shared__ float sdata[256];
    int c = blockIdx.x;
    long long terms = (long long)batch * parts;
    float acc = 0.0f;
    for (long long j = threadIdx.x; j < terms; j += blockDim.x) {
        long long n = j / parts;
        long long p = j % parts;
        acc += partial[(n * channels + c) * parts + p];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) invstd[c] = rsqrtf(sdata[0] / (float)count + eps);
}

// y = (x - mean[c]) * invstd[c] * weight[c] + bias[c]
extern "C" __global__ void batch_norm_apply(const float* __restrict__ x, const float* __restrict__ mean,
                                            const float* __restrict__ invstd, const float* __restrict__ weight,
                                            const float* __restrict__ bias, float* __restrict__ y,
                                            long long n, int channels, long long plane_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = (int)((i / plane_len) % channels);
        y[i] = (x[i] - mean[c]) * invstd[c] * weight[c] + bias[c];
    }
}
