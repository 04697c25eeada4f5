// Inclusive prefix sum along each row of a (rows, cols) matrix. One block per row: the row is
// scanned in chunks of blockDim.x with a Hillis-Steele scan in shared memory, and a running carry
// (the total of the chunks before) is added. Block size 256, fixed in launch.py.

extern "C" __global__ void cumsum_rows(const float* __restrict__ x, float* __restrict__ out,
                                       int rows, int cols) {
    __shared__ float sdata[256];
    int row = blockIdx.x;
    if (row >= rows) return;  // whole block leaves together, so no barrier is skipped
    const float* xr = x + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    float carry = 0.0f;  // every thread keeps the same copy
    for (int start = 0; start < cols; start += blockDim.x) {
        int j = start + threadIdx.x;
        sdata[threadIdx.x] = (j < cols) ? xr[j] : 0.0f;  // the tail of the last chunk adds nothing
        __syncthreads();
        for (int offset = 1; offset < blockDim.x; offset <<= 1) {
            float add = (threadIdx.x >= offset) ? sdata[threadIdx.x - offset] : 0.0f;
            __syncthreads();  // all reads of this step before any write
            sdata[threadIdx.x] += add;
            __syncthreads();
        }
        if (j < cols) {
            outr[j] = carry + sdata[threadIdx.x];
        }
        carry += sdata[blockDim.x - 1];
        __syncthreads();  // everyone has read the chunk total before the next chunk is loaded
    }
}
