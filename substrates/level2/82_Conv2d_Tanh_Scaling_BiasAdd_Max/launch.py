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
    conv = model.conv
    args, shape = _conv2d_args(conv, x)
    N, C, Hc, Wc = shape
    y = k.empty(*shape)
    n = y.numel()
    k.conv2d_tanh_scale_bias(x, conv.weight.contiguous(), conv.bias.contiguous(), model.bias.contiguous(),
                             y, *args, float(model.scaling_factor), grid=k.cdiv(n, BLOCK), block=BLOCK)
    pargs, (Ho, Wo) = _pool2d_args(model.max_pool, N * C, Hc, Wc)
    out = k.empty(N, C, Ho, Wo)
    m = out.numel()
    k.max_pool2d(y, out, *pargs, grid=k.cdiv(m, BLOCK), block=BLOCK)
    return out
