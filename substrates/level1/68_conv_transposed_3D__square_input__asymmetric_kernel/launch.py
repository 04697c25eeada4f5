BLOCK = 256


def launch(k, model, x):
    conv = model.conv_transpose3d
    x = x.contiguous()
    w = conv.weight.contiguous()  # (C, OC / groups, KD, KH, KW)
    N, C, D, H, W = x.shape
    _, ocpg, KD, KH, KW = w.shape
    groups = conv.groups
    OC = ocpg * groups
    sd, sh, sw = conv.stride
    pd, ph, pw = conv.padding
    dd, dh, dw = conv.dilation
    opd, oph, opw = conv.output_padding
    OD = (D - 1) * sd - 2 * pd + dd * (KD - 1) + opd + 1
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    out = k.empty(N, OC, OD, OH, OW)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OD * OH * OW
    k.conv_transpose3d_gather(x, w, bias, out, n, C, D, H, W, OC, OD, OH, OW, KD, KH, KW,
                              sd, sh, sw, pd, ph, pw, dd, dh, dw, groups, has_bias,
                              grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
