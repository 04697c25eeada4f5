BLOCK = 256


def launch(k, model, x):
    conv = model.conv1d_transpose
    x = x.contiguous()
    w = conv.weight.contiguous()  # (C, OC / groups, K)
    N, C, L = x.shape
    _, ocpg, K = w.shape
    groups = conv.groups
    OC = ocpg * groups
    (stride,) = conv.stride
    (pad,) = conv.padding
    (dil,) = conv.dilation
    (opad,) = conv.output_padding
    OL = (L - 1) * stride - 2 * pad + dil * (K - 1) + opad + 1
    out = k.empty(N, OC, OL)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OL
    k.conv_transpose1d_gather(x, w, bias, out, n, C, L, OC, OL, K, stride, pad, dil, groups,
                              has_bias, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
