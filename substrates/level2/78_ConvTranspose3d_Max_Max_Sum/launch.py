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
    args, shape = _convT3d_args(conv, x)
    N, C, D, H, W = shape
    y = k.empty(*shape)
    n = y.numel()
    k.conv_transpose3d_fwd(x, conv.weight.contiguous(), conv.bias.contiguous(), y, *args,
                           grid=k.cdiv(n, BLOCK), block=BLOCK)
    pargs, (D1, H1, W1) = _pool3d_args(model.max_pool1, N * C, D, H, W)
    p1 = k.empty(N, C, D1, H1, W1)
    m1 = p1.numel()
    k.max_pool3d(y, p1, *pargs, grid=k.cdiv(m1, BLOCK), block=BLOCK)
    pargs, (D2, H2, W2) = _pool3d_args(model.max_pool2, N * C, D1, H1, W1)
    p2 = k.empty(N, C, D2, H2, W2)
    m2 = p2.numel()
    k.max_pool3d(p1, p2, *pargs, grid=k.cdiv(m2, BLOCK), block=BLOCK)
    out = k.empty(N, 1, D2, H2, W2)
    S2 = D2 * H2 * W2
    k.channel_sum(p2, out, N, C, S2, grid=k.cdiv(N * S2, BLOCK), block=BLOCK)
    return out
