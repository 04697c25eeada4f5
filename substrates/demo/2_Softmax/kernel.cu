// Softmax over each row of a (rows, cols) matrix: one block per row, three passes over the row.
// Block size is fixed at 256 in launch.py and must match the shared arrays.

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out,
                                        int rows, int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* xr = x + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    // pass 1: the row max, so expf never overflows
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        m = fmaxf(m, xr[j]);
    }
    sdata[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] = fmaxf(sdata[threadIdx.x], sdata[threadIdx.x + s]);
        __syncthreads();
    }
    float row_max = sdata[0];
    __syncthreads();  // everyone has read the max before sdata is reused

    // pass 2: sum of shifted exponentials
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        acc += expf(xr[j] - row_max);
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float row_sum = sdata[0];

    // pass 3: normalise
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        outr[j] = expf(xr[j] - row_max) / row_sum;
    }
}
