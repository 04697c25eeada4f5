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


def _bn_stats(k, y, N, C, S, eps):
    """Per-channel batch mean and rstd of y viewed as (N, C, S): row sums, then channel trees."""
    rows = N * C
    rowsum = k.empty(rows)
    k.row_sum(y, rowsum, rows, S, grid=rows, block=BLOCK)
    mean = k.empty(C)
    k.channel_mean(rowsum, mean, N, C, N * S, grid=C, block=BLOCK)
    rowsq = k.empty(rows)
    k.row_sq_dev(y, mean, rowsq, rows, C, S, grid=rows, block=BLOCK)
    rstd = k.empty(C)
    k.channel_rstd(rowsq, rstd, N, C, N * S, eps, grid=C, block=BLOCK)
    return mean, rstd, rowsum


def _avg_pool3d_args(pool, D, H, W):
    """(kernel, stride, output volume) of nn.AvgPool3d `pool`; no padding, floor mode."""
    assert not pool.ceil_mode and pool.divisor_override is None
    assert _triple(pool.padding) == (0, 0, 0)
    KD, KH, KW = _triple(pool.kernel_size)
    sd, sh, sw = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    Do, Ho, Wo = (D - KD) // sd + 1, (H - KH) // sh + 1, (W - KW) // sw + 1
    return (KD, KH, KW, sd, sh, sw), (Do, Ho, Wo)


def launch(k, model, x):
    x = x.contiguous()
    conv, bn = model.conv_transpose, model.batch_norm
    args, shape = _convT3d_args(conv, x)
    N, C, D, H, W = shape
    y = k.empty(*shape)
    n = y.numel()
    k.conv_transpose3d_fwd(x, conv.weight.contiguous(), conv.bias.contiguous(), y, *args,
                           grid=k.cdiv(n, BLOCK), block=BLOCK)
    mean, rstd, _ = _bn_stats(k, y, N, C, D * H * W, bn.eps)
    kargs, (D1, H1, W1) = _avg_pool3d_args(model.avg_pool1, D, H, W)
    p1 = k.empty(N, C, D1, H1, W1)
    m1 = p1.numel()
    k.bn_avg_pool3d(y, mean, rstd, bn.weight.contiguous(), bn.bias.contiguous(), p1,
                    N, C, D, H, W, D1, H1, W1, *kargs, grid=k.cdiv(m1, BLOCK), block=BLOCK)
    kargs, (D2, H2, W2) = _avg_pool3d_args(model.avg_pool2, D1, H1, W1)
    out = k.empty(N, C, D2, H2, W2)
    m2 = out.numel()
    k.avg_pool3d(p1, out, N * C, D1, H1, W1, D2, H2, W2, *kargs, grid=k.cdiv(m2, BLOCK), block=BLOCK)
    return out
