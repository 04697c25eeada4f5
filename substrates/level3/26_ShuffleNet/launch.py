BLOCK = 256
TILE = 32
RED_BLOCK = 512
POOL_BLOCK = 256  # matches POOL_BLOCK in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x):
    """nn.Conv2d without bias: a direct kernel when depthwise (groups = C_in = C_out), else a
    tiled implicit GEMM with one group per grid z."""
    if conv.bias is not None or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        raise ValueError("conv2d handles bias=False with numeric zero padding only")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    groups = conv.groups
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    if groups == cin and groups == cout:
        total = y.numel()
        k.conv2d_depthwise(x, conv.weight.contiguous(), y, cout, h, w, oh, ow, kh, kw,
                           sh, sw, ph, pw, dh, dw, total,
                           grid=k.cdiv(total, BLOCK), block=BLOCK)
    else:
        m = n * oh * ow
        k.conv2d_igemm(x, conv.weight.contiguous(), y, n, cin, h, w, cout, oh, ow, kh, kw,
                       sh, sw, ph, pw, dh, dw, groups,
                       grid=(k.cdiv(m, TILE), k.cdiv(cout // groups, TILE), groups), block=(TILE, TILE))
    return y


def batch_norm(k, bn, y):
    """nn.BatchNorm2d as its forward uses it: batch statistics in training mode (or without
    running stats), the running statistics in eval mode."""
    n, c, h, w = y.shape
    hw = h * w
    if bn.training or bn.running_mean is None or bn.running_var is None:
        mean = k.empty(c, dtype=y.dtype)
        var = k.empty(c, dtype=y.dtype)
        k.bn2d_stats(y, mean, var, n, c, hw, grid=c, block=RED_BLOCK)
    else:
        mean, var = bn.running_mean, bn.running_var
    out = k.empty_like(y)
    total = y.numel()
    k.bn2d_apply(y, mean, var, bn.weight, bn.bias, out, c, hw, total, float(bn.eps),
                 grid=k.cdiv(total, BLOCK), block=BLOCK)
    return out


def relu(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def add(k, a, b):
    out = k.empty_like(a)
    n = a.numel()
    k.add_forward(a, b, out, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out


def channel_shuffle(k, shuffle, x):
    """ChannelShuffle as an index permutation: (N, g, C/g, H, W) -> transpose(1, 2) -> flatten."""
    n, c, h, w = x.shape
    groups = shuffle.groups
    if c % groups != 0:
        raise ValueError("channel count not divisible by the shuffle's groups")
    y = k.empty_like(x)
    total = y.numel()
    k.channel_shuffle(x, y, c, groups, h * w, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


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


def adaptive_avgpool2d(k, x, oh, ow):
    """F.adaptive_avg_pool2d(x, (oh, ow))."""
    n, c, h, w = x.shape
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    k.adaptive_avgpool2d(x, y, h, w, oh, ow, grid=y.numel(), block=POOL_BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return y


def shufflenet_unit(k, unit, x):
    out = relu(k, batch_norm(k, unit.bn1, conv2d(k, unit.conv1, x)))
    out = batch_norm(k, unit.bn2, conv2d(k, unit.conv2, out))
    out = channel_shuffle(k, unit.shuffle, out)
    out = relu(k, batch_norm(k, unit.bn3, conv2d(k, unit.conv3, out)))
    shortcut = x
    if len(unit.shortcut) > 0:
        sc_conv, sc_bn = unit.shortcut[0], unit.shortcut[1]
        shortcut = batch_norm(k, sc_bn, conv2d(k, sc_conv, x))
    return add(k, out, shortcut)


def launch(k, model, x):
    x = x.contiguous()
    x = relu(k, batch_norm(k, model.bn1, conv2d(k, model.conv1, x)))
    x = maxpool2d(k, model.maxpool, x)
    for stage in (model.stage2, model.stage3, model.stage4):
        for unit in stage:
            x = shufflenet_unit(k, unit, x)
    x = relu(k, batch_norm(k, model.bn5, conv2d(k, model.conv5, x)))
    x = adaptive_avgpool2d(k, x, 1, 1)
    x = x.reshape(x.shape[0], -1)  # x.view(x.size(0), -1) of the contiguous (N, C, 1, 1) tensor
    return linear(k, model.fc, x)
