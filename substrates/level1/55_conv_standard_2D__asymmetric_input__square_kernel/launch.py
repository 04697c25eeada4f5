BLOCK = 256


def launch(k, model, x):
    conv = model.conv2d
    x = x.contiguous()
    w = conv.weight.contiguous()
    N, C, H, W = x.shape
    OC, _, KH, KW = w.shape
    sh, sw = conv.stride
    ph, pw = conv.padding
    dh, dw = conv.dilation
    groups = conv.groups
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    out = k.empty(N, OC, OH, OW)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OH * OW
    k.conv2d_direct(x, w, bias, out, n, C, H, W, OC, OH, OW, KH, KW,
                    sh, sw, ph, pw, dh, dw, groups, has_bias,
                    grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
