BLOCK = 256
RED_BLOCK = 256


def conv_transpose2d(k, ct, x):
    """nn.ConvTranspose2d forward (with bias) into a fresh buffer."""
    N, C_in, H, W = x.shape
    _, cout_g, KH, KW = ct.weight.shape
    C_out = cout_g * ct.groups
    sh, sw = ct.stride
    ph, pw = ct.padding
    dh, dw = ct.dilation
    oph, opw = ct.output_padding
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    y = k.empty(N, C_out, OH, OW)
    n = y.numel()
    k.conv_transpose2d_forward(x, ct.weight, ct.bias, y, N, C_in, H, W, C_out, OH, OW, KH, KW,
                               sh, sw, ph, pw, dh, dw, ct.groups,
                               grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def launch(k, model, x):
    x = x.contiguous()
    y = conv_transpose2d(k, model.conv_transpose, x)
    N, C, H, W = y.shape
    n = y.numel()

    bn = model.batch_norm
    mean = k.empty(C)
    rstd = k.empty(C)
    k.batch_norm_stats(y, mean, rstd, N, C, H * W, float(bn.eps), grid=C, block=RED_BLOCK)
    t = k.empty_like(y)
    k.batch_norm_tanh(y, mean, rstd, bn.weight, bn.bias, t, n, C, H * W,
                      grid=k.cdiv(n, BLOCK), block=BLOCK)

    pool = model.max_pool
    KH, KW = _pair(pool.kernel_size)
    SH, SW = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    PH, PW = _pair(pool.padding)
    DH, DW = _pair(pool.dilation)
    OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
    OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
    p = k.empty(N, C, OH, OW)
    k.max_pool2d(t, p, N * C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW,
                 grid=k.cdiv(p.numel(), BLOCK), block=BLOCK)

    gn = model.group_norm
    G = gn.num_groups
    out = k.empty_like(p)
    k.group_norm(p, gn.weight, gn.bias, out, N, C, G, OH * OW, float(gn.eps),
                 grid=N * G, block=RED_BLOCK)
    return out
