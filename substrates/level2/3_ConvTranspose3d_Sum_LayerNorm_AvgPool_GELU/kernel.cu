// level2/3: ConvTranspose3d -> + sum_weight -> LayerNorm(last dims) -> AvgPool3d -> GELU.

// ConvTranspose3d (NCDHW) as a gather: one thread per OUTPUT element sums every input position
// that maps onto it (od = id * stride - pad + kd * dil, likewise h and w).
// weight: (C_in, C_out / groups, KD, KH, KW); bias: (C_out).
extern "C" __global__ void conv_transpose3d_forward(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ y, int N, int C_in, int D, int H, int W, int C_out, int OD, int OH, int OW,
        int KD, int KH, int KW, int stride_d, int stride_h, int stride_w, int pad_d, int pad_h, int pad_w,
        int dil_d, int dil_h, int dil_w, int groups) {
    long long total = (long long)N * C_out * OD * OH * OW;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        int co = (int)((i / ((long long)OW * OH * OD)) % C_out);
        int n = (int)(i / ((long long)OW * OH * OD * C_out));
        int cin_g = C_in / groups;
        int cout_g = C_out / groups;
        int g = co / cout_g;
        int col = co - g * cout_g;
        long long DHW = (long long)D * H * W;
        const float* xn = x + ((long long)n * C_in + (long long)g * cin_g) * DHW;
        const float* wg = w + ((long long)g * cin_g * cout_g + col) * KD * KH * KW;
        long long w_ci_stride = (long long)cout_g * KD * KH * KW;
        float acc = 0.0f;
        for (int kd = 0; kd < KD; kd++) {
            int td = od + pad_d - kd * dil_d;
            if (td < 0 || td % stride_d != 0) continue;
            int id = td / stride_d;
            if (id >= D) continue;
            for (int kh = 0; kh < KH; kh++) {
                int th = oh + pad_h - kh * dil_h;
                if (th < 0 || th % stride_h != 0) continue;
                int ih = th / stride_h;
                if (ih >= H) continue;
                for (int kw = 0; kw < KW; kw++) {
                    int tw = ow + pad_w - kw * dil_w;
                    if (tw < 0 || tw % stride_w != 0) continue;
                    int iw = tw / stride_w;
                    if (iw >= W) continue;
                    long long x_off = ((long long)id * H + ih) * W + iw;
                    long long w_off = ((long long)kd * KH + kh) * KW + kw;
                    for (int ci = 0; ci < cin_g; ci++) {
                        acc += xn[x_off] * wg[w_off];
                        x_off += DHW;
                        w_off += w_ci_stride;
                    }
                }
            }
        }
        y[i] = acc + b[co];
    }
}

// Adds the scalar sum_weight, then LayerNorm over rows of L contiguous elements (the trailing
// normalized_shape), two-pass mean / biased variance in fp32; one block of 256 threads per row.
extern "C" __global__ void add_layer_norm(const float* __restrict__ y, const float* __restrict__ sum_weight,
                                          const float* __restrict__ gamma, const float* __restrict__ beta,
                                          float* __restrict__ out, long long rows, int L, float eps) {
    __shared__ float sdata[256];
    long long row = blockIdx.x;
    if (row >= rows) return;
    const float* yr = y + row * L;
    float add = sum_weight[0];
    float acc = 0.0f;
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        acc += yr[j] + add;
    }
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float mean = sdata[0] / L;
    __syncthreads();
    float vacc = 0.0f;
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        float d = yr[j] + add - mean;
        vacc += d * d;
    }
    sdata[threadIdx.x] = vacc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    float rstd = rsqrtf(sdata[0] / L + eps);
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        out[row * L + j] = (yr[j] + add - mean) * rstd * gamma[j] + beta[j];
    }
}

// AvgPool3d (count_include_pad semantics of PyTorch) followed by exact (erf) GELU; one thread
// per pooled output.
extern "C" __global__ void avg_pool3d_gelu(const float* __restrict__ in, float* __restrict__ out,
                                           long long NC, int D, int H, int W, int OD, int OH, int OW, int KD,
                                           int KH, int KW, int SD, int SH, int SW, int PD, int PH, int PW,
                                           int count_include_pad) {
    long long total = NC * OD * OH * OW;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int ow = (int)(i % OW);
        int oh = (int)((i / OW) % OH);
        int od = (int)((i / ((long long)OW * OH)) % OD);
        long long nc = i / ((long long)OW * OH * OD);
        int d0 = od * SD - PD;
        int h0 = oh * SH - PH;
        int w0 = ow * SW - PW;
        int d1 = min(d0 + KD, D + PD);
        int h1 = min(h0 + KH, H + PH);
        int w1 = min(w0 + KW, W + PW);
        int pool_size = (d1 - d0) * (h1 - h0) * (w1 - w0);
        d0 = max(d0, 0);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        d1 = min(d1, D);
        h1 = min(h1, H);
        w1 = min(w1, W);
        const float* p = in + nc * D * H * W;
        float acc = 0.0f;
        for (int d = d0; d < d1; d++) {
            for (int h = h0; h < h1; h++) {
                for (int w = w0; w < w1; w++) {
                    acc += p[((long long)d * H + h) * W + w];
                }
            }
        }
        int divisor = count_include_pad ? pool_size : (d1 - d0) * (h1 - h0) * (w1 - w0);
        float v = acc / divisor;
        out[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    }
}
