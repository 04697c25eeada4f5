BLOCK = 256


def launch(k, model, x):
    conv = model.conv_transpose2d
    x = x.contiguous()
    w = conv.weight.contiguous()  # (C, OC / groups, KH, KW)
    N, C, H, W = x.shape
    _, ocpg, KH, KW = w.shape
    groups = conv.groups
    OC = ocpg * groups
    sh, sw = conv.stride
    ph, pw = conv.padding
    dh, dw = conv.dilation
    oph, opw = conv.output_padding
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    out = k.empty(N, OC, OH, OW)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OH * OW
    k.conv_transpose2d_gather(x, w, bias, out, n, C, H, W, OC, OH, OW, KH, KW,
                              sh, sw, ph, pw, dh, dw, groups, has_bias,
                              grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
