BLOCK = 256


def launch(k, model, x):
    conv = model.conv3d
    x = x.contiguous()
    w = conv.weight.contiguous()
    N, C, D, H, W = x.shape
    OC, _, KD, KH, KW = w.shape
    sd, sh, sw = conv.stride
    pd, ph, pw = conv.padding
    dd, dh, dw = conv.dilation
    groups = conv.groups
    OD = (D + 2 * pd - dd * (KD - 1) - 1) // sd + 1
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    out = k.empty(N, OC, OD, OH, OW)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OD * OH * OW
    k.conv3d_direct(x, w, bias, out, n, C, D, H, W, OC, OD, OH, OW, KD, KH, KW,
                    sd, sh, sw, pd, ph, pw, dd, dh, dw, groups, has_bias,
                    grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
