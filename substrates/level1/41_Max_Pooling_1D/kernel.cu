// MaxPool1d: one thread per output element of (N * C, out_len). The window starts at
// o * stride - padding and takes kernel_size taps dilation apart; taps in the padding are skipped
// (PyTorch pads with -inf), so the max is seeded with -INFINITY.
extern "C" __global__ void max_pool1d(const float* __restrict__ x, float* __restrict__ y,
                                      long long n_out, int in_len, int out_len,
                                      int kernel_size, int stride, int padding, int dilation) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int o = (int)(i % out_len);
        long long row = i / out_len;
        const float* src = x + row * in_len;
        int start = o * stride - padding;
        float best = -INFINITY;
        for (int k = 0; k < kernel_size; k++) {
            int p = start + k * dilation;
            if (p >= 0 && p < in_len) {
                best = fmaxf(best, src[p]);
            }
        }
        y[i] = best;
    }
}
