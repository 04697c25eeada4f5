BLOCK = 256  # threads per block; matches sdata[256] in kernel.cu where a kernel reduces


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def _conv3d_args(conv, x):
    """(sizes..., output shape) of nn.Conv3d `conv` on x, read from the module."""
    assert conv.padding_mode == "zeros" and not isinstance(conv.padding, str)
    N, Cin, D, H, W = x.shape
    Cout, _, KD, KH, KW = conv.weight.shape
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _triple(conv.stride), _triple(conv.padding), _triple(conv.dilation)
    Do = (D + 2 * pd - dd * (KD - 1) - 1) // sd + 1
    Ho = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    args = (N, Cin, D, H, W, Cout, Do, Ho, Wo, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw, conv.groups)
    return args, (N, Cout, Do, Ho, Wo)


def launch(k, model, x):
    x = x.contiguous()
    conv = model.conv
    args, shape = _conv3d_args(conv, x)
    out = k.empty(*shape)
    n = out.numel()
    k.conv3d_leaky_sum_clamp_gelu(x, conv.weight.contiguous(), conv.bias.contiguous(),
                                  model.sum_tensor.contiguous(), out, *args,
                                  grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
