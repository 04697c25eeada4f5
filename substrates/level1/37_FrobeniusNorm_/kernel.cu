// Frobenius-norm normalisation: x / sqrt(sum of x^2 over the whole tensor). The sum is a
// multi-block reduction: partial_sumsq sums the squares of one chunk per block into a scratch
// buffer, frobenius_norm reduces the partials with a tree in one block, then divide_by_norm.

// partial[part] = sum of x^2 over [part * chunk, min((part + 1) * chunk, n))
extern "C" __global__ void partial_sumsq(const float* __restrict__ x, float* __restrict__ partial,
                                         long long n, long long chunk) {
    __shared__ float sdata[256];
    long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk;
    if (end > n) end = n;
    float acc = 0.0f;
    for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
        float v = x[j];
        acc += v * v;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sdata[0];
}

// norm[0] = sqrt(sum of the partials); launched as a single block
extern "C" __global__ void frobenius_norm(const float* __restrict__ partial, float* __restrict__ norm,
                                          int parts) {
    __shared__ float sdata[256];
    float acc = 0.0f;
    for (int j = threadIdx.x; j < parts; j += blockDim.x) {
        acc += partial[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) norm[0] = sqrtf(sdata[0]);
}

extern "C" __global__ void divide_by_norm(const float* __restrict__ x, const float* __restrict__ norm,
                                          float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] / norm[0];
    }
}
