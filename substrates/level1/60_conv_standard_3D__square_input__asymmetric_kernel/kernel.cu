// 3-D convolution (cross-correlation, as nn.Conv3d), direct form: one thread per output element.
// x (N, C, D, H, W), w (OC, C/groups, KD, KH, KW), out (N, OC, OD, OH, OW); zero padding,
// stride, dilation, groups. The flat output index is decoded into (n, oc, od, oh, ow); the thread
// sums over the in-channels of its group and the kernel taps in fp32. bias is read only when
// has_bias is set.
extern "C" __global__ void conv3d_direct(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ bias, float* __restrict__ out,
                                         long long n_out, int C, int D, int H, int W,
                                         int OC, int OD, int OH, int OW, int KD, int KH, int KW,
                                         int stride_d, int stride_h, int stride_w,
                                         int pad_d, int pad_h, int pad_w,
                                         int dil_d, int dil_h, int dil_w, int groups, int has_bias) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_out) {
        int ow = (int)(i % OW);
        long long t = i / OW;
        int oh = (int)(t % OH);
        t = t / OH;
        int od = (int)(t % OD);
        t = t / OD;
        int oc = (int)(t % OC);
        long long n = t / OC;
        int cpg = C / groups;
        int ocpg = OC / groups;
        int g = oc / ocpg;
        float acc = has_bias ? bias[oc] : 0.0f;
        for (int icl = 0; icl < cpg; ++icl) {
            long long xbase = (n * C + (long long)g * cpg + icl) * D * H * W;
            long long wbase = ((long long)oc * cpg + icl) * KD * KH * KW;
            for (int kd = 0; kd < KD; ++kd) {
                int id = od * stride_d - pad_d + kd * dil_d;
                for (int kh = 0; kh < KH; ++kh) {
                    int ih = oh * stride_h - pad_h + kh * dil_h;
                    for (int kw = 0; kw < KW; ++kw) {
                        int iw = ow * stride_w - pad_w + kw * dil_w;
                        float v = (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
                                      ? x[xbase + ((long long)id * H + ih) * W + iw] : 0.0f;
                        acc += v * w[wbase + (kd * KH + kh) * KW + kw];
                    }
                }
            }
        }
        out[i] = acc;
    }
}
