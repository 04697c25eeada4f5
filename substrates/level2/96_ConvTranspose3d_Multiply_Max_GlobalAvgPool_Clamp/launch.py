BLOCK = 256  # threads per block; matches sdata[256] in kernel.cu where a kernel reduces


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def _convT3d_args(conv, x):
    """(sizes..., output shape) of nn.ConvTranspose3d `conv` on x, read from the module."""
    N, Cin, D, H, W = x.shape
    _, cout_g, KD, KH, KW = conv.weight.shape
    Cout = cout_g * conv.groups
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _triple(conv.stride), _triple(conv.padding), _triple(conv.dilation)
    opd, oph, opw = _triple(conv.output_padding)
    Do = (D - 1) * sd - 2 * pd + dd * (KD - 1) + opd + 1
    Ho = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    Wo = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    args = (N, Cin, D, H, W, Cout, Do, Ho, Wo, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, conv.groups)
    return args, (N, Cout, Do, Ho, Wo)


def _pool3d_args(pool, NC, D, H, W):
    """(sizes..., output volume) of nn.MaxPool3d `pool` on (NC, D, H, W), floor mode."""
    assert not pool.ceil_mode
    KD, KH, KW = _triple(pool.kernel_size)
    sd, sh, sw = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    (pd, ph, pw), (dd, dh, dw) = _triple(pool.padding), _triple(pool.dilation)
    Do = (D + 2 * pd - dd * (KD - 1) - 1) // sd + 1
    Ho = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    return (NC, D, H, W, Do, Ho, Wo, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw), (Do, Ho, Wo)


def launch(k, model, x):
    x = x.contiguous()
    conv = model.conv_transpose
    assert tuple(model.global_avg_pool.output_size) == (1, 1, 1)
    args, shape = _convT3d_args(conv, x)
    N, C, D, H, W = shape
    y = k.empty(*shape)
    n = y.numel()
    k.conv_transpose3d_scale(x, conv.weight.contiguous(), conv.bias.contiguous(), y, *args,
                             float(model.scale), grid=k.cdiv(n, BLOCK), block=BLOCK)
    pargs, (Do, Ho, Wo) = _pool3d_args(model.maxpool, N * C, D, H, W)
    p = k.empty(N, C, Do, Ho, Wo)
    m = p.numel()
    k.max_pool3d(y, p, *pargs, grid=k.cdiv(m, BLOCK), block=BLOCK)
    out = k.empty(N, C, 1, 1, 1)
    k.row_mean_clamp(p, out, N * C, Do * Ho * Wo, float(model.clamp_min), float(model.clamp_max),
                     grid=N * C, block=BLOCK)
    return out
