// LayerNorm over the trailing `cols` elements of each row, with elementwise affine.
// One block per row; two-pass mean and variance in fp32. Block size 256, fixed in launch.py.

extern "C" __global__ void layer_norm_rows(const float* __restrict__ x,
                                           const float* __restrict__ weight,
                                           const float* __restrict__ bias, float* __restrict__ out,
                                           int rows, int cols, float eps) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* xr = x + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    // pass 1: mean
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        acc += xr[j];
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / cols;
    __syncthreads();  // everyone has read the mean before sdata is reused

    // pass 2: biased variance around the mean (not E[x^2] - mean^2, which cancels badly)
    float sq = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = xr[j] - mean;
        sq += d * d;
    }
    sdata[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float var = sdata[0] / cols;
    float rstd = rsqrtf(var + eps);

    // pass 3: normalise, then scale and shift
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        outr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
    }
}
