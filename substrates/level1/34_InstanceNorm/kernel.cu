// InstanceNorm2d (affine=False, no running stats): each (n, c) plane is normalised by its own
// mean and biased variance over (H, W). One block per plane: a shared-memory tree reduction for
// the mean, a second for the squared deviations (two-pass, fp32), then the elementwise write.
extern "C" __global__ void instance_norm(const float* __restrict__ x, float* __restrict__ y,
                                         long long plane_len, float eps) {
    __shared__ float sdata[512];
    long long plane = blockIdx.x;
    const float* src = x + plane * plane_len;
    float* dst = y + plane * plane_len;

    float acc = 0.0f;
    for (long long j = threadIdx.x; j < plane_len; j += blockDim.x) {
        acc += src[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / (float)plane_len;
    __syncthreads();

    float sq = 0.0f;
    for (long long j = threadIdx.x; j < plane_len; j += blockDim.x) {
        float d = src[j] - mean;
        sq += d * d;
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float invstd = rsqrtf(sdata[0] / (float)plane_len + eps);

    for (long long j = threadIdx.x; j < plane_len; j += blockDim.x) {
        dst[j] = (src[j] - mean) * invstd;
    }
}
