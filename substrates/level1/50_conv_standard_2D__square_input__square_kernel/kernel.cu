// Conv2d (zero padding, stride, dilation, groups, optional bias), direct form: one thread per
// output element (n, oc, oh, ow) accumulates in fp32 over its group's input channels and the
// kernel window; taps that fall in the padding are skipped by explicit bounds guards.
extern "C" __global__ void conv2d(const float* __restrict__ x, const float* __restrict__ weight,
                                  const float* __restrict__ bias, float* __restrict__ y,
                                  long long n_out, int in_c, int in_h, int in_w,
                                  int out_c, int out_h, int out_w, int kernel_h, int kernel_w,
                                  int stride_h, int stride_w, int pad_h, int pad_w,
                                  int dilation_h, int dilation_w, int groups, int has_bias) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ow = (int)(i % out_w);
        int oh = (int)((i / out_w) % out_h);
        int oc = (int)((i / ((long long)out_w * out_h)) % out_c);
        long long n = i / ((long long)out_w * out_h * out_c);
        int cin_per_group = in_c / groups;
        int cout_per_group = out_c / groups;
        int g = oc / cout_per_group;
        int h0 = oh * stride_h - pad_h;
        int w0 = ow * stride_w - pad_w;
        float acc = 0.0f;
        for (int ic = 0; ic < cin_per_group; ic++) {
            const float* src = x + (n * in_c + g * cin_per_group + ic) * in_h * in_w;
            const float* wk = weight + ((long long)oc * cin_per_group + ic) * kernel_h * kernel_w;
            for (int kh = 0; kh < kernel_h; kh++) {
                int h = h0 + kh * dilation_h;
                if (h < 0 || h >= in_h) continue;
                for (int kw = 0; kw < kernel_w; kw++) {
                    int w = w0 + kw * dilation_w;
                    if (w >= 0 && w < in_w) {
                        acc += src[(long long)h * in_w + w] * wk[kh * kernel_w + kw];
                    }
                }
            }
        }
        if (has_bias) acc += bias[oc];
        y[i] = acc;
    }
}
