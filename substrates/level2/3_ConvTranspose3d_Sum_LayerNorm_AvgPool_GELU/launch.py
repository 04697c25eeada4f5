BLOCK = 256
RED_BLOCK = 256


def conv_transpose3d(k, ct, x):
    """nn.ConvTranspose3d forward (with bias) into a fresh buffer."""
    N, C_in, D, H, W = x.shape
    _, cout_g, KD, KH, KW = ct.weight.shape
    C_out = cout_g * ct.groups
    sd, sh, sw = ct.stride
    pd, ph, pw = ct.padding
    dd, dh, dw = ct.dilation
    opd, oph, opw = ct.output_padding
    OD = (D - 1) * sd - 2 * pd + dd * (KD - 1) + opd + 1
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    y = k.empty(N, C_out, OD, OH, OW)
    n = y.numel()
    k.conv_transpose3d_forward(x, ct.weight, ct.bias, y, N, C_in, D, H, W, C_out, OD, OH, OW,
                               KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, ct.groups,
                               grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def launch(k, model, x):
    x = x.contiguous()
    y = conv_transpose3d(k, model.conv_transpose, x)
    N, C, D, H, W = y.shape

    norm = model.norm
    L = 1
    for s in norm.normalized_shape:
        L *= s
    z = k.empty_like(y)
    rows = y.numel() // L
    k.add_layer_norm(y, model.sum_weight, norm.weight, norm.bias, z, rows, L, float(norm.eps),
                     grid=rows, block=RED_BLOCK)

    pool = model.avg_pool
    KD, KH, KW = _triple(pool.kernel_size)
    SD, SH, SW = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    PD, PH, PW = _triple(pool.padding)
    OD = (D + 2 * PD - KD) // SD + 1
    OH = (H + 2 * PH - KH) // SH + 1
    OW = (W + 2 * PW - KW) // SW + 1
    out = k.empty(N, C, OD, OH, OW)
    n = out.numel()
    k.avg_pool3d_gelu(z, out, N * C, D, H, W, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW,
                      int(pool.count_include_pad), grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
