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


def launch(k, model, x):
    x = x.contiguous()
    conv, bn = model.conv_transpose, model.batch_norm
    assert tuple(model.global_avg_pool.output_size) == (1, 1, 1)
    args, shape = _convT3d_args(conv, x)
    N, C, D, H, W = shape
    S = D * H * W
    y = k.empty(*shape)
    n = y.numel()
    k.conv_transpose3d_scale(x, conv.weight.contiguous(), conv.bias.contiguous(), y, *args,
                             float(model.scale_factor), grid=k.cdiv(n, BLOCK), block=BLOCK)
    mean, rstd, rowsum = _bn_stats(k, y, N, C, S, bn.eps)
    out = k.empty(N, C, 1, 1, 1)
    k.bn_global_avg(rowsum, mean, rstd, bn.weight.contiguous(), bn.bias.contiguous(), out, N * C, C, S,
                    grid=k.cdiv(N * C, BLOCK), block=BLOCK)
    return out
