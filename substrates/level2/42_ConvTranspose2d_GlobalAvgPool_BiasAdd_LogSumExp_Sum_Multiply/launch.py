BLOCK = 256
RED_BLOCK = 256


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def launch(k, model, x):
    ct = model.conv_transpose
    x = x.contiguous()
    n, cin, h, w = x.shape
    _, cout_g, kh, kw = ct.weight.shape
    cout = cout_g * ct.groups
    sh, sw = _pair(ct.stride)
    ph, pw = _pair(ct.padding)
    dh, dw = _pair(ct.dilation)
    oph, opw = _pair(ct.output_padding)
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    total = n * cout * oh * ow
    k.conv_transpose2d(x, ct.weight, ct.bias, y, n, cin, h, w, cout, oh, ow, kh, kw,
                       sh, sw, ph, pw, dh, dw, ct.groups, total,
                       grid=k.cdiv(total, BLOCK), block=BLOCK)

    m = k.empty(n, cout, dtype=x.dtype)
    k.spatial_mean_bias(y, model.bias, m, cout, oh * ow, grid=n * cout, block=RED_BLOCK)

    out = k.empty(n, 1, dtype=x.dtype)
    k.logsumexp_channels_mul(m, out, cout, grid=n, block=RED_BLOCK)
    return out
