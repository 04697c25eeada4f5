BLOCK = 256
TILE = 32         # matches TILE in kernel.cu
RED_BLOCK = 512   # matches RED_BLOCK in kernel.cu
POOL_BLOCK = 256  # matches POOL_BLOCK in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def write_channels(k, src, dst, c_off):
    """dst[:, c_off:c_off+C] = src, src (N, C, H, W), dst (N, C_total, H, W)."""
    n, c, h, w = src.shape
    c_total = dst.shape[1]
    assert dst.shape[0] == n and dst.shape[2] == h and dst.shape[3] == w and c_off + c <= c_total
    total = src.numel()
    k.write_channels(src, dst, c, c_off, c_total, h * w, total, grid=k.cdiv(total, BLOCK), block=BLOCK)


def batch_norm(k, bn, feat, c):
    """nn.BatchNorm2d over the leading c channels of feat (N, C_total, H, W), as its forward uses
    it: batch statistics in training mode (or without running stats), the running statistics in
    eval mode. Returns a contiguous (N, c, H, W) tensor."""
    n, c_total, h, w = feat.shape
    assert bn.num_features == c
    hw = h * w
    if bn.training or bn.running_mean is None or bn.running_var is None:
        mean = k.empty(c, dtype=feat.dtype)
        var = k.empty(c, dtype=feat.dtype)
        k.bn2d_stats(feat, mean, var, n, c_total, hw, grid=c, block=RED_BLOCK)
    else:
        mean, var = bn.running_mean, bn.running_var
    if not bn.affine:
        raise ValueError("bn2d_apply needs the affine weight and bias")
    out = k.empty(n, c, h, w, dtype=feat.dtype)
    total = out.numel()
    k.bn2d_apply(feat, mean, var, bn.weight, bn.bias, out, c, c_total, hw, total, float(bn.eps),
                 grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out


def relu(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def conv2d(k, conv, x):
    """nn.Conv2d without bias (groups 1) as a tiled implicit GEMM."""
    if conv.groups != 1 or conv.bias is not None or conv.padding_mode != "zeros":
        raise ValueError("conv2d_igemm handles groups=1, zero padding and bias=False only")
    if isinstance(conv.padding, str):
        raise ValueError("conv2d_igemm needs numeric padding")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), y, n, cin, h, w, cout, oh, ow, kh, kw,
                   sh, sw, ph, pw, dh, dw,
                   grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def dense_layer(k, layer, feat, c):
    """One Sequential(BatchNorm2d, ReLU, Conv2d, Dropout) on the leading c channels of feat."""
    x = None
    for mod in layer:
        kind = type(mod).__name__
        if kind == "BatchNorm2d":
            x = batch_norm(k, mod, feat, c)
        elif kind == "ReLU":
            x = relu(k, x)
        elif kind == "Conv2d":
            x = conv2d(k, mod, x)
        elif kind == "Dropout":
            if mod.training and mod.p != 0.0:
                raise ValueError("no kernel for dropout with p > 0 in training mode")
            # p = 0 (or eval mode): the identity
        else:
            raise ValueError(f"no kernel for {kind}")
    return x


def _pool_out(size, kernel, stride, pad, dil, ceil_mode):
    span = size + 2 * pad - dil * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad:
            out -= 1
    else:
        out = span // stride + 1
    return out


def maxpool2d(k, pool, x):
    n, c, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    dh, dw = _pair(pool.dilation)
    oh = _pool_out(h, kh, sh, ph, dh, pool.ceil_mode)
    ow = _pool_out(w, kw, sw, pw, dw, pool.ceil_mode)
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.maxpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, total,
                grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def avgpool2d(k, pool, x):
    n, c, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    oh = _pool_out(h, kh, sh, ph, 1, pool.ceil_mode)
    ow = _pool_out(w, kw, sw, pw, 1, pool.ceil_mode)
    divisor = pool.divisor_override if pool.divisor_override is not None else 0
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.avgpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, int(bool(pool.count_include_pad)), int(divisor),
                total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def adaptive_avgpool2d(k, x, out_size):
    n, c, h, w = x.shape
    out_size = _pair(out_size)
    oh = h if out_size[0] is None else out_size[0]
    ow = w if out_size[1] is None else out_size[1]
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    k.adaptive_avgpool2d(x, y, h, w, oh, ow, grid=y.numel(), block=POOL_BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    if lin.bias is None:
        raise ValueError("linear_forward needs the bias")
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return y


def sequential(k, seq, x):
    """The stem and the transition layers: Conv2d, BatchNorm2d, ReLU, MaxPool2d, AvgPool2d."""
    for mod in seq:
        kind = type(mod).__name__
        if kind == "Conv2d":
            x = conv2d(k, mod, x)
        elif kind == "BatchNorm2d":
            x = batch_norm(k, mod, x, x.shape[1])
        elif kind == "ReLU":
            x = relu(k, x)
        elif kind == "MaxPool2d":
            x = maxpool2d(k, mod, x)
        elif kind == "AvgPool2d":
            x = avgpool2d(k, mod, x)
        else:
            raise ValueError(f"no kernel for {kind}")
    return x


def dense_block(k, block, x):
    # features = [x, new_0, new_1, ...]; torch.cat(features, 1) after layer i is the leading
    # C0 + (i+1)*growth channels of one buffer, and layer i reads the leading C0 + i*growth.
    n, c0, h, w = x.shape
    growth = [next(m for m in layer if type(m).__name__ == "Conv2d").weight.shape[0]
              for layer in block.layers]
    c_total = c0 + sum(growth)
    feat = k.empty(n, c_total, h, w, dtype=x.dtype)
    write_channels(k, x, feat, 0)
    c = c0
    for layer in block.layers:
        new = dense_layer(k, layer, feat, c)
        assert new.shape[2] == h and new.shape[3] == w
        write_channels(k, new, feat, c)
        c += new.shape[1]
    assert c == c_total
    return feat


def launch(k, model, x):
    x = x.contiguous()
    x = sequential(k, model.features, x)
    n_blocks = len(model.dense_blocks)
    for i, block in enumerate(model.dense_blocks):
        x = dense_block(k, block, x)
        if i != n_blocks - 1:
            x = sequential(k, model.transition_layers[i].transition, x)
    x = relu(k, batch_norm(k, model.final_bn, x, x.shape[1]))
    x = adaptive_avgpool2d(k, x, (1, 1))
    x = x.reshape(x.shape[0], -1)  # .view(x.size(0), -1) of the contiguous NCHW tensor
    return linear(k, model.classifier, x)
