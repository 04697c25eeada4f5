import math

TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (layer_norm_rows' and softmax_rows' shared arrays)


def _linear(k, layer, h, out, act):
    M, K = h.shape
    w = layer.weight.contiguous()
    N = w.shape[0]
    assert w.shape[1] == K and layer.bias is not None
    k.linear_bias_act(h, w, layer.bias.contiguous(), out, M, N, K, act,
                      grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))


def _linear_residual(k, layer, h, res, out):
    M, K = h.shape
    w = layer.weight.contiguous()
    N = w.shape[0]
    assert w.shape[1] == K and layer.bias is not None
    k.linear_bias_residual(h, w, layer.bias.contiguous(), res, out, M, N, K,
                           grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))


def _layer_norm(k, ln, h, out):
    rows, cols = h.shape
    assert tuple(ln.normalized_shape) == (cols,) and ln.weight is not None
    k.layer_norm_rows(h, ln.weight.contiguous(), ln.bias.contiguous(), out, rows, cols, float(ln.eps),
                      grid=rows, block=BLOCK)


def _take_token(k, x, t):
    nb, T, D = x.shape
    out = k.empty(nb, D, dtype=x.dtype)
    n = nb * D
    k.take_token(x, out, nb, T, D, t, grid=k.cdiv(n, BLOCK), block=BLOCK)
    return out


def _encoder_layer(k, layer, x):
    """nn.TransformerEncoderLayer (post-norm, relu or gelu, dropout 0 or eval) on x (d0, d1, E):
    (L, N, E) if not batch_first, else (N, L, E). Returns a new (d0, d1, E) tensor."""
    attn = layer.self_attn
    assert not layer.norm_first
    act = layer.activation_relu_or_gelu  # 1: F.relu, 2: F.gelu (exact); 0 would be a custom callable
    assert act in (1, 2)
    assert attn._qkv_same_embed_dim and attn.in_proj_bias is not None
    assert attn.bias_k is None and attn.bias_v is None and not attn.add_zero_attn
    for p in (attn.dropout, layer.dropout.p, layer.dropout1.p, layer.dropout2.p):
        assert p == 0.0 or not layer.training
    d0, d1, E = x.shape
    nh = attn.num_heads
    assert E == attn.embed_dim and E % nh == 0
    hd = E // nh
    if attn.batch_first:
        nb, L = d0, d1
        s_stride, b_stride = 1, L    # row of (l, n) = n * L + l
    else:
        L, nb = d0, d1
        s_stride, b_stride = nb, 1   # row of (l, n) = l * nb + n
    M = d0 * d1
    x2 = x.view(M, E)

    qkv = k.empty(M, 3 * E, dtype=x.dtype)
    k.linear_bias_act(x2, attn.in_proj_weight.contiguous(), attn.in_proj_bias.contiguous(), qkv,
                      M, 3 * E, E, 0, grid=(k.cdiv(3 * E, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    Z = nb * nh
    scale = 1.0 / math.sqrt(hd)
    att = k.empty(Z, L, L, dtype=x.dtype)
    k.attn_scores(qkv, att, L, E, nh, hd, s_stride, b_stride, scale,
                  grid=(k.cdiv(L, TILE), k.cdiv(L, TILE), Z), block=(TILE, TILE))
    rows = Z * L
    k.softmax_rows(att, rows, L, grid=rows, block=BLOCK)
    y = k.empty(M, E, dtype=x.dtype)
    k.attn_values(att, qkv, y, L, E, nh, hd, s_stride, b_stride,
                  grid=(k.cdiv(hd, TILE), k.cdiv(L, TILE), Z), block=(TILE, TILE))
    r1 = k.empty(M, E, dtype=x.dtype)
    _linear_residual(k, attn.out_proj, y, x2, r1)
    h1 = k.empty(M, E, dtype=x.dtype)
    _layer_norm(k, layer.norm1, r1, h1)

    ff = layer.linear1.weight.shape[0]
    f = k.empty(M, ff, dtype=x.dtype)
    _linear(k, layer.linear1, h1, f, act)
    r2 = k.empty(M, E, dtype=x.dtype)
    _linear_residual(k, layer.linear2, f, h1, r2)
    out = k.empty(M, E, dtype=x.dtype)
    _layer_norm(k, layer.norm2, r2, out)
    return out.view(d0, d1, E)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _conv2d(k, conv, x):
    """nn.Conv2d with bias (groups 1, zero padding) as a tiled implicit GEMM."""
    assert conv.groups == 1 and conv.bias is not None and conv.padding_mode == "zeros"
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    dh, dw = _pair(conv.dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = k.empty(n, cout, oh, ow, dtype=x.dtype)
    m = n * oh * ow
    k.conv2d_bias_igemm(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout,
                        oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                        grid=(k.cdiv(m, TILE), k.cdiv(cout, TILE)), block=(TILE, TILE))
    return y


def launch(k, model, x):
    x = x.contiguous()
    B = x.shape[0]
    f = _conv2d(k, model.conv1, x)                 # (B, D, H/p, W/p)
    flat = f.view(B, -1)                           # (B, D * NP)
    D = model.linear_proj.weight.shape[0]
    e = k.empty(B, D, dtype=x.dtype)
    _linear(k, model.linear_proj, flat, e, 0)

    # cat(cls, e.unsqueeze(1)) -> (B, 2, D)
    t = k.empty(B, 2, D, dtype=x.dtype)
    n = t.numel()
    k.cat_cls_token(model.cls_token.contiguous(), e, t, B, 1, D, grid=k.cdiv(n, BLOCK), block=BLOCK)

    for layer in model.transformer_layers:
        t = _encoder_layer(k, layer, t)

    c = _take_token(k, t, 0)
    ncls = model.fc_out.weight.shape[0]
    out = k.empty(B, ncls, dtype=x.dtype)
    _linear(k, model.fc_out, c, out, 0)
    return out
