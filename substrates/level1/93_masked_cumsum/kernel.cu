// Inclusive prefix sum of x * mask along one dimension (mask is bool, same shape as x).
// Each of the outer * inner rows of the tensor, seen as (outer, len, inner) (elements len apart
// by a stride of inner), is scanned by one block: in chunks of blockDim.x with a Hillis-Steele
// scan in shared memory, plus a running carry (the total of the chunks before).
// Block size 256, fixed in launch.py.

extern "C" __global__ void masked_cumsum_scan(const float* __restrict__ x, const bool* __restrict__ mask,
                                              float* __restrict__ out, long long rows, int len, int inner) {
    __shared__ float sdata[256];
    long long row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    long long base = (row / inner) * len * inner + row % inner;

    float carry = 0.0f;  // every thread keeps the same copy
    for (int start = 0; start < len; start += blockDim.x) {
        int j = start + threadIdx.x;
        long long idx = base + (long long)j * inner;
        // x * mask as torch computes it: x * 1.0 or x * 0.0; the tail adds nothing
        sdata[threadIdx.x] = (j < len) ? x[idx] * (mask[idx] ? 1.0f : 0.0f) : 0.0f;
        __syncthreads();
        for (int offset = 1; offset < blockDim.x; offset <<= 1) {
            float add = (threadIdx.x >= offset) ? sdata[threadIdx.x - offset] : 0.0f;
            __syncthreads();  // all reads of this step before any write
            sdata[threadIdx.x] += add;
            __syncthreads();
        }
        if (j < len) {
            out[idx] = carry + sdata[threadIdx.x];
        }
        carry += sdata[blockDim.x - 1];
        __syncthreads();  // everyone has read the chunk total before the next chunk is loaded
    }
}
