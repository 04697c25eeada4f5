// AvgPool1d: one thread per output element of (N * C, out_len), following PyTorch's avg_pool:
// the window [start, start + kernel_size) is first clipped to the padded extent (its length is
// the count_include_pad divisor), then to the input; padding contributes zeros to the sum.
extern "C" __global__ void avg_pool1d(const float* __restrict__ x, float* __restrict__ y,
                                      long long n_out, int in_len, int out_len,
                                      int kernel_size, int stride, int padding, int count_include_pad) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int o = (int)(i % out_len);
        long long row = i / out_len;
        const float* src = x + row * in_len;
        int start = o * stride - padding;
        int end = min(start + kernel_size, in_len + padding);
        int pool_size = end - start;
        start = max(start, 0);
        end = min(end, in_len);
        float acc = 0.0f;
        for (int p = start; p < end; p++) {
            acc += src[p];
        }
        int divisor = count_include_pad ? pool_size : (end - start);
        y[i] = end > start ? acc / (float)divisor : 0.0f;
    }
}
