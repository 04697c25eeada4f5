// MaxPool3d: one thread per output element of (N * C, out_d, out_h, out_w). The window starts at
// (od * stride_d - pad_d, oh * stride_h - pad_h, ow * stride_w - pad_w) with taps dilation apart;
// taps in the padding are skipped (PyTorch pads with -inf), so the max is seeded with -INFINITY.
extern "C" __global__ void max_pool3d(const float* __restrict__ x, float* __restrict__ y,
                                      long long n_out, int in_d, int in_h, int in_w,
                                      int out_d, int out_h, int out_w,
                                      int kernel_d, int kernel_h, int kernel_w,
                                      int stride_d, int stride_h, int stride_w,
                                      int pad_d, int pad_h, int pad_w,
                                      int dilation_d, int dilation_h, int dilation_w) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ow = (int)(i % out_w);
        int oh = (int)((i / out_w) % out_h);
        int od = (int)((i / ((long long)out_w * out_h)) % out_d);
        long long vol = i / ((long long)out_w * out_h * out_d);
        const float* src = x + vol * in_d * in_h * in_w;
        int d0 = od * stride_d - pad_d;
        int h0 = oh * stride_h - pad_h;
        int w0 = ow * stride_w - pad_w;
        float best = -INFINITY;
        for (int kd = 0; kd < kernel_d; kd++) {
            int d = d0 + kd * dilation_d;
            if (d < 0 || d >= in_d) continue;
            for (int kh = 0; kh < kernel_h; kh++) {
                int h = h0 + kh * dilation_h;
                if (h < 0 || h >= in_h) continue;
                for (int kw = 0; kw < kernel_w; kw++) {
                    int w = w0 + kw * dilation_w;
                    if (w >= 0 && w < in_w) {
                        best = fmaxf(best, src[((long long)d * in_h + h) * in_w + w]);
                    }
                }
            }
        }
        y[i] = best;
    }
}
