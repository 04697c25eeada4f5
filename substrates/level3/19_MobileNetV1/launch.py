import torch.nn as nn

BLOCK = 256
TILE = 32
RED_BLOCK = 512


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x):
    """nn.Conv2d without bias: a direct kernel when depthwise (groups = C_in = C_out), else a
    tiled implicit GEMM with one group per grid z."""
    if conv.bias is not None or conv.padding_mode != "zeros":
        raise ValueError("conv2d handles bias=False with zero padding only")
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


def _pool_out(size, kernel, stride, pad, ceil_mode):
    span = size + 2 * pad - kernel
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad:
            out -= 1
    else:
        out = span // stride + 1
    return out


def avgpool2d(k, pool, x):
    n, c, h, w = x.shape
    kh, kw = _pair(pool.kernel_size)
    sh, sw = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    oh = _pool_out(h, kh, sh, ph, pool.ceil_mode)
    ow = _pool_out(w, kw, sw, pw, pool.ceil_mode)
    divisor = pool.divisor_override if pool.divisor_override is not None else 0
    y = k.empty(n, c, oh, ow, dtype=x.dtype)
    total = y.numel()
    k.avgpool2d(x, y, h, w, oh, ow, kh, kw, sh, sw, ph, pw, bool(pool.count_include_pad), divisor, total,
                grid=k.cdiv(total, BLOCK), block=BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return y


def run_module(k, mod, x):
    """Walk the nn.Sequential stages of model.model, layer by layer."""
    if isinstance(mod, nn.Sequential):
        for sub in mod:
            x = run_module(k, sub, x)
        return x
    if isinstance(mod, nn.Conv2d):
        return conv2d(k, mod, x)
    if isinstance(mod, nn.BatchNorm2d):
        return batch_norm(k, mod, x)
    if isinstance(mod, nn.ReLU):
        return relu(k, x)
    if isinstance(mod, nn.AvgPool2d):
        return avgpool2d(k, mod, x)
    raise ValueError(f"unsupported layer {type(mod).__name__}")


def launch(k, model, x):
    x = x.contiguous()
    x = run_module(k, model.model, x)
    x = x.reshape(x.shape[0], -1)  # x.view(x.size(0), -1) of the contiguous NCHW tensor
    return linear(k, model.fc, x)
