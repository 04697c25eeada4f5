// Cross-entropy loss, F.cross_entropy(predictions (N, C), targets (N,) int64), mean over the batch,
// to a 0-dim output. Stage 1: one block per row computes logsumexp(row) - row[target] (row max
// subtracted before expf; shared-memory tree reductions). Stage 2 averages the N row losses.
// Block size 256, fixed in launch.py.

extern "C" __global__ void cross_entropy_rows(const float* __restrict__ logits, const long long* __restrict__ targets,
                                              float* __restrict__ row_loss, int rows, int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* xr = logits + (long long)row * cols;

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

    // -log_softmax(row)[target] = log(sum) + max - row[target]
    if (threadIdx.x == 0) {
        long long t = targets[row];
        float picked = (t >= 0 && t < cols) ? xr[t] : 0.0f;
        row_loss[row] = logf(sdata[0]) + row_max - picked;
    }
}

// Stage 2: one block sums the row losses with a tree and divides by count (the mean's denominator).
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
