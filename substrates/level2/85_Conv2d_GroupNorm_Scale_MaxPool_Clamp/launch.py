BLOCK = 256  # threads per block; matches sdata[256] in kernel.cu where a kernel reduces


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _conv2d_args(conv, x):
    """(sizes..., output shape) of nn.Conv2d `conv` on x, read from the module."""
    assert conv.padding_mode == "zeros" and not isinstance(conv.padding, str)
    N, Cin, H, W = x.shape
    Cout, _, KH, KW = conv.weight.shape
    (sh, sw), (ph, pw), (dh, dw) = _pair(conv.stride), _pair(conv.padding), _pair(conv.dilation)
    Ho = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    args = (N, Cin, H, W, Cout, Ho, Wo, KH, KW, sh, sw, ph, pw, dh, dw, conv.groups)
    return args, (N, Cout, Ho, Wo)


def _pool2d_args(pool, NC, H, W):
    """(sizes..., output plane) of nn.MaxPool2d `pool` on (NC, H, W), floor mode."""
    assert not pool.ceil_mode
    KH, KW = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    (ph, pw), (dh, dw) = _pair(pool.padding), _pair(pool.dilation)
    Ho = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    return (NC, H, W, Ho, Wo, KH, KW, sh, sw, ph, pw, dh, dw), (Ho, Wo)


def launch(k, model, x):
    x = x.contiguous()
    conv, gn = model.conv, model.group_norm
    args, shape = _conv2d_args(conv, x)
    N, C, Hc, Wc = shape
    G = gn.num_groups
    y = k.empty(*shape)
    n = y.numel()
    k.conv2d_fwd(x, conv.weight.contiguous(), conv.bias.contiguous(), y, *args,
                 grid=k.cdiv(n, BLOCK), block=BLOCK)
    mean = k.empty(N * G)
    rstd = k.empty(N * G)
    k.group_stats(y, mean, rstd, N * G, (C // G) * Hc * Wc, gn.eps, grid=N * G, block=BLOCK)
    pargs, (Ho, Wo) = _pool2d_args(model.maxpool, N * C, Hc, Wc)
    out = k.empty(N, C, Ho, Wo)
    m = out.numel()
    k.gn_scale_maxpool2d_clamp(y, mean, rstd, gn.weight.contiguous(), gn.bias.contiguous(),
                               model.scale.contiguous(), out, N, C, G, *pargs[1:],
                               float(model.clamp_min), float(model.clamp_max),
                               grid=k.cdiv(m, BLOCK), block=BLOCK)
    return out
