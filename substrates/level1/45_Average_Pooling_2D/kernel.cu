// AvgPool2d: one thread per output element of (N * C, out_h, out_w), following PyTorch's
// avg_pool2d: the window is first clipped to the padded extent (its area is the count_include_pad
// divisor), then to the input; padding contributes zeros. divisor_override > 0 replaces the divisor.
extern "C" __global__ void avg_pool2d(const float* __restrict__ x, float* __restrict__ y,
                                      long long n_out, int in_h, int in_w, int out_h, int out_w,
                                      int kernel_h, int kernel_w, int stride_h, int stride_w,
                                      int pad_h, int pad_w, int count_include_pad, int divisor_override) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ow = (int)(i % out_w);
        int oh = (int)((i / out_w) % out_h);
        long long plane = i / ((long long)out_w * out_h);
        const float* src = x + plane * in_h * in_w;
        int h0 = oh * stride_h - pad_h;
        int w0 = ow * stride_w - pad_w;
        int h1 = min(h0 + kernel_h, in_h + pad_h);
        int w1 = min(w0 + kernel_w, in_w + pad_w);
        int pool_size = (h1 - h0) * (w1 - w0);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        h1 = min(h1, in_h);
        w1 = min(w1, in_w);
        float acc = 0.0f;
        for (int h = h0; h < h1; h++) {
            for (int w = w0; w < w1; w++) {
                acc += src[(long long)h * in_w + w];
            }
        }
        int divisor;
        if (divisor_override > 0) {
            divisor = divisor_override;
        } else if (count_include_pad) {
            divisor = pool_size;
        } else {
            divisor = (h1 - h0) * (w1 - w0);
        }
        y[i] = (h0 < h1 && w0 < w1) ? acc / (float)divisor : 0.0f;
    }
}
