BLOCK = 256


def launch(k, model, x):
    conv = model.conv1d
    x = x.contiguous()
    w = conv.weight.contiguous()
    N, C, L = x.shape
    OC, _, K = w.shape
    (stride,) = conv.stride
    (pad,) = conv.padding
    (dil,) = conv.dilation
    groups = conv.groups
    OL = (L + 2 * pad - dil * (K - 1) - 1) // stride + 1
    out = k.empty(N, OC, OL)
    has_bias = 1 if conv.bias is not None else 0
    bias = conv.bias if conv.bias is not None else w  # not read when has_bias is 0
    n = N * OC * OL
    k.conv1d_direct(x, w, bias, out, n, C, L, OC, OL, K, stride, pad, dil, groups, has_bias,
                    grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out
