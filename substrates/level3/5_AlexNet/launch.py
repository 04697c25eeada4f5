BLOCK = 256
TILE_M = 64  # kernel.cu's output tile, computed by 16 x 16 threads
TILE_N = 64
THREADS = 16


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv2d(k, conv, x):
    """nn.Conv2d with bias (groups 1) as a tiled implicit GEMM."""
    if conv.groups != 1 or conv.bias is None:
        raise ValueError("conv2d_igemm handles groups=1 with a bias only")
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    m = n * oh * ow
    k.conv2d_igemm(x, conv.weight.contiguous(), conv.bias, y, n, cin, h, w, cout, oh, ow, kh, kw,
                   sh, sw, ph, pw, dh, dw,
                   grid=(k.cdiv(m, TILE_M), k.cdiv(cout, TILE_N)), block=(THREADS, THREADS))
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


def relu(k, x):
    y = k.empty_like(x)
    n = x.numel()
    k.relu_forward(x, y, n, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return y


def linear(k, lin, x):
    """nn.Linear: y = x W^T + b, shared-memory tiled."""
    M, K = x.shape
    N = lin.weight.shape[0]
    y = k.empty(M, N, dtype=x.dtype)
    k.linear_forward(x, lin.weight.contiguous(), lin.bias, y, M, N, K,
                     grid=(k.cdiv(N, TILE_N), k.cdiv(M, TILE_M)), block=(THREADS, THREADS))
    return y


def dropout(drop, x):
    # p = 0 is the identity in training and eval mode alike
    if drop.training and drop.p != 0.0:
        raise ValueError("dropout with p > 0 in training mode is random")
    return x


def launch(k, model, x):
    x = x.contiguous()
    x = maxpool2d(k, model.maxpool1, relu(k, conv2d(k, model.conv1, x)))
    x = maxpool2d(k, model.maxpool2, relu(k, conv2d(k, model.conv2, x)))
    x = relu(k, conv2d(k, model.conv3, x))
    x = relu(k, conv2d(k, model.conv4, x))
    x = maxpool2d(k, model.maxpool3, relu(k, conv2d(k, model.conv5, x)))
    x = x.reshape(x.shape[0], -1)  # torch.flatten(x, 1): a view of the contiguous NCHW tensor
    x = dropout(model.dropout1, relu(k, linear(k, model.fc1, x)))
    x = dropout(model.dropout2, relu(k, linear(k, model.fc2, x)))
    return linear(k, model.fc3, x)
