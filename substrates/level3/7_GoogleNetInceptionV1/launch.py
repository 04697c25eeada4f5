import torch.nn as nn

BLOCK = 256
TILE = 32  # matches TILE in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _conv_out(conv, h, w):
    _, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    return (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1


def conv2d(k, conv, x, y=None, c_off=0):
    """nn.Conv2d with bias (groups 1) as a tiled implicit GEMM. Written into channels
    [c_off, c_off + C_out) of y when given, else into a new tensor."""
    if conv.groups != 1 or conv.bias is None or conv.padding_mode != "zeros":
        raise ValueError("conv2d_igemm handles groups=1, zero padding, with a bias only")
    if isinstance(conv.padding, str):
        raise ValueError("conv2d_igemm needs numeric padding")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh, ow = _conv_out(conv, h, w)
    if y is None:
        y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    if tuple(y.shape) != (n, y.shape[1], oh, ow) or c_off + cout > y.shape[1]:
        raise ValueError("output slice does not fit the conv's output")
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout, oh, ow,
                   kh, kw, sh, sw, ph, pw, dh, dw, c_off, y.shape[1],
                   grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def relu(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
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


def _pool_params(pool):
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    dh, dw = _pair(pool.dilation)
    return kh, kw, sh, sw, ph, pw, dh, dw


def maxpool2d(k, pool, x):
    if pool.return_indices:
        raise ValueError("maxpool2d returns values only")
    n, c, h, w = x.shape
    kh, kw, sh, sw, ph, pw, dh, dw = _pool_params(pool)
    oh = _pool_out(h, kh, sh, ph, dh, pool.ceil_mode)
    ow = _pool_out(w, kw, sw, pw, dw, pool.ceil_mode)
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.maxpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, total,
                grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def adaptive_avgpool2d(k, pool, x):
    n, c, h, w = x.shape
    oh, ow = _pair(pool.output_size)
    oh = h if oh is None else oh
    ow = w if ow is None else ow
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.adaptive_avgpool2d(x, y, h, w, oh, ow, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return y


# -- the inception module: four branches into channel slices of one output ----------------------

def _branch_out(layers, x_shape):
    """(channels, height, width) a branch's layers leave, from the input's shape."""
    _, c, h, w = x_shape
    for layer in layers:
        if isinstance(layer, nn.Conv2d):
            c = layer.weight.shape[0]
            h, w = _conv_out(layer, h, w)
        elif isinstance(layer, nn.MaxPool2d):
            kh, kw, sh, sw, ph, pw, dh, dw = _pool_params(layer)
            h = _pool_out(h, kh, sh, ph, dh, layer.ceil_mode)
            w = _pool_out(w, kw, sw, pw, dw, layer.ceil_mode)
        else:
            raise ValueError(f"no kernel for {type(layer).__name__}")
    return c, h, w


def _run_branch(k, layers, x, out, c_off):
    """The layers of one branch in order; the last one (a conv) writes its slice of out."""
    for i, layer in enumerate(layers):
        last = i == len(layers) - 1
        if isinstance(layer, nn.Conv2d):
            if last:
                conv2d(k, layer, x, out, c_off)
            else:
                x = conv2d(k, layer, x)
        elif isinstance(layer, nn.MaxPool2d) and not last:
            x = maxpool2d(k, layer, x)
        else:
            raise ValueError(f"no kernel for {type(layer).__name__} here")


def inception(k, mod, x):
    # the order of torch.cat([branch1x1, branch3x3, branch5x5, branch_pool], 1)
    branches = [[mod.branch1x1], list(mod.branch3x3), list(mod.branch5x5), list(mod.branch_pool)]
    outs = [_branch_out(layers, x.shape) for layers in branches]
    oh, ow = outs[0][1], outs[0][2]
    if any((h, w) != (oh, ow) for _, h, w in outs):
        raise ValueError("branches disagree on the output size")
    out = k.empty(x.shape[0], sum(c for c, _, _ in outs), oh, ow, dtype=x.dtype)
    c_off = 0
    for layers, (c, _, _) in zip(branches, outs):
        _run_branch(k, layers, x, out, c_off)
        c_off += c
    return out


def launch(k, model, x):
    x = x.contiguous()
    x = maxpool2d(k, model.maxpool1, relu(k, conv2d(k, model.conv1, x)))
    x = relu(k, conv2d(k, model.conv2, x))
    x = maxpool2d(k, model.maxpool2, relu(k, conv2d(k, model.conv3, x)))

    x = inception(k, model.inception3a, x)
    x = inception(k, model.inception3b, x)
    x = maxpool2d(k, model.maxpool3, x)

    x = inception(k, model.inception4a, x)
    x = inception(k, model.inception4b, x)
    x = inception(k, model.inception4c, x)
    x = inception(k, model.inception4d, x)
    x = inception(k, model.inception4e, x)
    x = maxpool2d(k, model.maxpool4, x)

    x = inception(k, model.inception5a, x)
    x = inception(k, model.inception5b, x)

    x = adaptive_avgpool2d(k, model.avgpool, x)
    x = x.reshape(x.shape[0], -1)  # torch.flatten(x, 1) of the contiguous NCHW tensor
    # model.dropout is nn.Dropout(0.0): the identity in any mode
    if model.dropout.training and model.dropout.p > 0.0:
        raise ValueError("dropout with p > 0 in training mode is random; no kernel for it")
    return linear(k, model.fc, x)
