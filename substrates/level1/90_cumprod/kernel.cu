// Inclusive prefix product along one dimension. The tensor is seen as (outer, len, inner); each of the
// outer * inner rows (elements len apart by a stride of inner) is scanned by one block: in chunks of
// blockDim.x with a Hillis-Steele scan in shared memory, plus a running carry (the product of
// the chunks before). Block size 256, fixed in launch.py.

extern "C" __global__ void cumprod_scan(const float* __restrict__ x, float* __restrict__ out,
                                        long long rows, int len, int inner) {
    __shared__ float sdata[256];
    long long row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    long long base = (row / inner) * len * inner + row % inner;

    float carry = 1.0f;  // every thread keeps the same copy
    for (int start = 0; start < len; start += blockDim.x) {
        int j = start + threadIdx.x;
        sdata[threadIdx.x] = (j < len) ? x[base + (long long)j * inner] : 1.0f;  // the tail multiplies by one
        __syncthreads();
        for (int offset = 1; offset < blockDim.x; offset <<= 1) {
            float mul = (threadIdx.x >= offset) ? sdata[threadIdx.x - offset] : 1.0f;
            __syncthreads();  // all reads of this step before any write
            sdata[threadIdx.x] *= mul;
            __syncthreads();
        }
        if (j < len) {
            out[base + (long long)j * inner] = carry * sdata[threadIdx.x];
        }
        carry *= sdata[blockDim.x - 1];
        __syncthreads();  // everyone has read the chunk product before the next chunk is loaded
    }
}
