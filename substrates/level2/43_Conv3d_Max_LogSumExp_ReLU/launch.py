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
    k.conv3d(x, conv.weight, conv.bias, y, n, cin, d, h, w, cout, od, oh, ow, kd, kh, kw,
             sd, sh, sw, pd, ph, pw, dd, dh, dw, conv.groups, total,
             grid=k.cdiv(total, BLOCK), block=BLOCK)

    pool = model.max_pool
    qkd, qkh, qkw = _triple(pool.kernel_size)
    qsd, qsh, qsw = _triple(pool.stride if pool.stride is not None else pool.kernel_size)
    qpd, qph, qpw = _triple(pool.padding)
    qdd, qdh, qdw = _triple(pool.dilation)
    pd_ = (od + 2 * qpd - qdd * (qkd - 1) - 1) // qsd + 1
    ph_ = (oh + 2 * qph - qdh * (qkh - 1) - 1) // qsh + 1
    pw_ = (ow + 2 * qpw - qdw * (qkw - 1) - 1) // qsw + 1
    p = k.empty(n, cout, pd_, ph_, pw_, dtype=x.dtype)
    total = n * cout * pd_ * ph_ * pw_
    k.max_pool3d(y, p, od, oh, ow, pd_, ph_, pw_, qkd, qkh, qkw, qsd, qsh, qsw, qpd, qph, qpw,
                 qdd, qdh, qdw, total, grid=k.cdiv(total, BLOCK), block=BLOCK)

    out = k.empty(n, 1, pd_, ph_, pw_, dtype=x.dtype)
    spatial = pd_ * ph_ * pw_
    total = n * spatial
    k.logsumexp_channels_relu(p, out, cout, spatial, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out
