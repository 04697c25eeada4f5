// 3-D transposed convolution (as nn.ConvTranspose3d) written as a gather: one thread per OUTPUT
// element. x (N, C, D, H, W), w (C, OC/groups, KD, KH, KW), out (N, OC, OD, OH, OW). Input
// position id feeds output od through tap kd when od = id * stride_d - pad_d + kd * dil_d, so for
// each tap the thread takes td = od + pad_d - kd * dil_d and uses id = td / stride_d only if
// td >= 0, td divides by stride_d and id < D (likewise for rows and columns). fp32 accumulation
// over the taps and the in-channels of the group; bias only when has_bias.
extern "C" __global__ void conv_transpose3d_gather(const float* __restrict__ x,
                                                   const float* __restrict__ w,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ out, long long n_out,
                                                   int C, int D, int H, int W,
                                                   int OC, int OD, int OH, int OW,
                                                   int KD, int KH, int KW,
                                                   int stride_d, int stride_h, int stride_w,
                                                   int pad_d, int pad_h, int pad_w,
                                                   int dil_d, int dil_h, int dil_w,
                                                   int groups, int has_bias) {
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
        int ocl = oc - g * ocpg;
        float acc = has_bias ? bias[oc] : 0.0f;
        for (int kd = 0; kd < KD; ++kd) {
            int td = od + pad_d - kd * dil_d;
            int id = td / stride_d;
            if (td >= 0 && td % stride_d == 0 && id < D) {
                for (int kh = 0; kh < KH; ++kh) {
                    int th = oh + pad_h - kh * dil_h;
                    int ih = th / stride_h;
                    if (th >= 0 && th % stride_h == 0 && ih < H) {
                        for (int kw = 0; kw < KW; ++kw) {
                            int tw = ow + pad_w - kw * dil_w;
                            int iw = tw / stride_w;
                            if (tw >= 0 && tw % stride_w == 0 && iw < W) {
                                for (int icl = 0; icl < cpg; ++icl) {
                                    int ic = g * cpg + icl;
                                    float v = x[(((n * C + ic) * D + id) * H + ih) * W + iw];
                                    acc += v * w[((((long long)ic * ocpg + ocl) * KD + kd) * KH + kh) * KW + kw];
                                }
                            }
                        }
                    }
                }
            }
        }
        out[i] = acc;
    }
}
