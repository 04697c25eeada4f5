BLOCK = 256


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def launch(k, model, x):
    conv = model.conv
    x = x.contiguous()
    n, cin, d, h, w = x.shape
    cout, _, kd, kh, kw = conv.weight.shape
    sd, sh, sw = _triple(conv.stride)
    pd, ph, pw = _triple(conv.padding)
    dd, dh, dw = _triple(conv.dilation)
    od = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    total = n * cout * od * oh * ow
    k.conv3d_mish_tanh(x, conv.weight, conv.bias, y, n, cin, d, h, w, cout, od, oh, ow, kd, kh, kw,
                       sd, sh, sw, pd, ph, pw, dd, dh, dw, conv.groups, total,
                       grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y
