BLOCK = 256


def _triple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)


def launch(k, model, x):
    ct = model.conv_transpose
    x = x.contiguous()
    n, cin, d, h, w = x.shape
    _, cout_g, kd, kh, kw = ct.weight.shape
    cout = cout_g * ct.groups
    sd, sh, sw = _triple(ct.stride)
    pd, ph, pw = _triple(ct.padding)
    dd, dh, dw = _triple(ct.dilation)
    opd, oph, opw = _triple(ct.output_padding)
    od = (d - 1) * sd - 2 * pd + dd * (kd - 1) + opd + 1
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    y = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    total = n * cout * od * oh * ow
    k.conv_transpose3d(x, ct.weight, ct.bias, y, n, cin, d, h, w, cout, od, oh, ow, kd, kh, kw,
                       sd, sh, sw, pd, ph, pw, dd, dh, dw, ct.groups, total,
                       grid=k.cdiv(total, BLOCK), block=BLOCK)

    out = k.empty(n, 1, od, oh, ow, dtype=x.dtype)
    spatial = od * oh * ow
    total = n * spatial
    k.lse_hardswish_sub_clamp(y, model.bias, out, cout, spatial, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out
