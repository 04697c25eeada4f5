// Triplet margin loss, mean over the batch of max(d(a, p) - d(a, n) + margin, 0), to a 0-dim output,
// with d(x, y) = ||x - y + eps||_p along the last dimension (torch's pairwise_distance).
// Stage 1: one block per row accumulates both p-th power sums (fp32 per thread) and reduces them
// with shared-memory trees. Stage 2 averages the row losses. Block size 256, fixed in launch.py.

extern "C" __global__ void triplet_rows(const float* __restrict__ anchor, const float* __restrict__ positive,
                                        const float* __restrict__ negative, float* __restrict__ row_loss,
                                        int rows, int cols, float margin, float p, float eps) {
    __shared__ float s_pos[256];
    __shared__ float s_neg[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* ar = anchor + (long long)row * cols;
    const float* pr = positive + (long long)row * cols;
    const float* nr = negative + (long long)row * cols;

    float acc_pos = 0.0f;
    float acc_neg = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float a = ar[j];
        acc_pos += powf(fabsf(a - pr[j] + eps), p);
        acc_neg += powf(fabsf(a - nr[j] + eps), p);
    }
    s_pos[threadIdx.x] = acc_pos;
    s_neg[threadIdx.x] = acc_neg;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_pos[threadIdx.x] += s_pos[threadIdx.x + s];
            s_neg[threadIdx.x] += s_neg[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float d_pos = powf(s_pos[0], 1.0f / p);
        float d_neg = powf(s_neg[0], 1.0f / p);
        row_loss[row] = fmaxf(margin + d_pos - d_neg, 0.0f);
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
