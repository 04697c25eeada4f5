BLOCK = 256


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


def max_pool3d(k, pool, y):
    N, C, D, H, W = y.shape
    KD, KH, KW = _triple(pool.kernel_size)
    SD, SH, SW = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    PD, PH, PW = _triple(pool.padding)
    DD, DH, DW = _triple(pool.dilation)
    OD = (D + 2 * PD - DD * (KD - 1) - 1) // SD + 1
    OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
    OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
    out = k.empty(N, C, OD, OH, OW)
    n = out.numel()
    k.max_pool3d(y, out, N * C, D, H, W, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW,
                 DD, DH, DW, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out


def launch(k, model, x):
    x = x.contiguous()
    y = conv3d(k, model.conv, x)
    N, C, D, H, W = y.shape
    S = D * H * W
    sm = k.empty_like(y)
    k.softmax_channels(y, sm, N * S, C, S, grid=k.cdiv(N * S, BLOCK), block=BLOCK)
    p1 = max_pool3d(k, model.pool1, sm)
    return max_pool3d(k, model.pool2, p1)
