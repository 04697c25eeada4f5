BLOCK = 256
TILE = 32        # matches TILE in kernel.cu
RED_BLOCK = 512  # matches RED_BLOCK in kernel.cu
POOL_BLOCK = 256  # matches POOL_BLOCK in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


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
    if not bn.affine:
        raise ValueError("bn2d_apply needs the affine weight and bias")
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


def adaptive_avgpool2d(k, pool, x):
    n, c, h, w = x.shape
    out_size = _pair(pool.output_size)
    oh = h if out_size[0] is None else out_size[0]
    ow = w if out_size[1] is None else out_size[1]
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


def bottleneck(k, block, x):
    out = relu(k, batch_norm(k, block.bn1, conv2d(k, block.conv1, x)))
    out = relu(k, batch_norm(k, block.bn2, conv2d(k, block.conv2, out)))
    out = batch_norm(k, block.bn3, conv2d(k, block.conv3, out))
    identity = x
    if block.downsample is not None:
        ds_conv, ds_bn = block.downsample[0], block.downsample[1]
        identity = batch_norm(k, ds_bn, conv2d(k, ds_conv, x))
    assert identity.shape == out.shape
    res = k.empty_like(out)
    n = out.numel()
    k.add_relu(out, identity, res, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return res


def launch(k, model, x):
    x = x.contiguous()
    x = relu(k, batch_norm(k, model.bn1, conv2d(k, model.conv1, x)))
    x = maxpool2d(k, model.maxpool, x)
    for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
        for block in layer:
            x = bottleneck(k, block, x)
    x = adaptive_avgpool2d(k, model.avgpool, x)
    x = x.reshape(x.shape[0], -1)  # torch.flatten(x, 1): a view of the contiguous NCHW tensor
    return linear(k, model.fc, x)
