BLOCK = 256
RED_BLOCK = 256


def conv3d(k, conv, x):
    """nn.Conv3d forward (with bias) into a fresh buffer."""
    N, C_in, D, H, W = x.shape
    C_out, _, KD, KH, KW = conv.weight.shape
    sd, sh, sw = conv.stride
    pd, ph, pw = conv.padding
    dd, dh, dw = conv.dilation
    OD = (D + 2 * pd - dd * (KD - 1) - 1) // sd + 1
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    y = k.empty(N, C_out, OD, OH, OW)
    n = y.numel()
    k.conv3d_forward(x, conv.weight, conv.bias, y, N, C_in, D, H, W, C_out, OD, OH, OW,
                     KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, conv.groups,
                     grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def launch(k, model, x):
    x = x.contiguous()
    y = conv3d(k, model.conv, x)
    N, C, D, H, W = y.shape

    pool = model.max_pool
    KD, KH, KW = _triple(pool.kernel_size)
    SD, SH, SW = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    PD, PH, PW = _triple(pool.padding)
    DD, DH, DW = _triple(pool.dilation)
    OD = (D + 2 * PD - DD * (KD - 1) - 1) // SD + 1
    OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
    OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
    p = k.empty(N, C, OD, OH, OW)
    n = p.numel()
    k.div_max_pool3d(y, p, N * C, D, H, W, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW,
                     DD, DH, DW, float(model.divisor), grid=k.cdiv(n, BLOCK), block=BLOCK)

    # AdaptiveAvgPool3d((1, 1, 1)) + bias, then the sum over dim 1 (model.sum_dim).
    g = k.empty(N, C)
    k.global_avg_bias(p, model.bias, g, N * C, C, OD * OH * OW, grid=N * C, block=RED_BLOCK)
    out = k.empty(N, 1, 1, 1)
    k.sum_channels(g, out, N, C, grid=k.cdiv(N, BLOCK), block=BLOCK)
    return out
