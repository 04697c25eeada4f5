BLOCK = 256
GN_BLOCK = 256


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
    has_bias = ct.bias is not None
    bias = ct.bias if has_bias else ct.weight  # never read when has_bias is 0
    y = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    total = n * cout * od * oh * ow
    k.conv_transpose3d_relu(x, ct.weight, bias, y, n, cin, d, h, w, cout, od, oh, ow, kd, kh, kw,
                            sd, sh, sw, pd, ph, pw, dd, dh, dw, ct.groups, int(has_bias), total,
                            grid=k.cdiv(total, BLOCK), block=BLOCK)

    gn = model.group_norm
    out = k.empty(n, cout, od, oh, ow, dtype=x.dtype)
    k.group_norm(y, gn.weight, gn.bias, out, cout, gn.num_groups, od * oh * ow, float(gn.eps),
                 grid=n * gn.num_groups, block=GN_BLOCK)
    return out
