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


def launch(k, model, x):
    x = x.contiguous()
    conv = model.conv_transpose
    args, shape = _convT3d_args(conv, x)
    out = k.empty(*shape)
    n = out.numel()
    k.conv_transpose3d_clamp_div(x, conv.weight.contiguous(), conv.bias.contiguous(), out, *args,
                                 float(model.min_value), float(model.divisor),
                                 grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
