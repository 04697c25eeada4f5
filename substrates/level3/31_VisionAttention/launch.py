import math

TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (layer_norm_rows' and softmax_rows' shared arrays)


def _transpose(k, x, out):
    nb, rows, cols = x.shape
    n = x.numel()
    k.transpose_batched(x, out, nb, rows, cols, grid=k.cdiv(n, BLOCK), block=BLOCK)


def _linear(k, w, b, h, out):
    M, K = h.shape
    N = w.shape[0]
    assert w.shape[1] == K and b is not None
    k.linear_bias(h, w.contiguous(), b.contiguous(), out, M, N, K,
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


def launch(k, model, x):
    attn = model.attn
    # nn.MultiheadAttention(embed_dim, num_heads): packed in_proj, biases, no bias_k/v, no zero attn,
    # dropout 0.0 (or eval mode), sequence-first inputs
    assert attn._qkv_same_embed_dim and attn.in_proj_bias is not None
    assert attn.bias_k is None and attn.bias_v is None and not attn.add_zero_attn
    assert attn.dropout == 0.0 or not model.training
    assert not attn.batch_first
    x = x.contiguous()
    B, C, H, W = x.shape
    S = H * W
    E = attn.embed_dim
    nh = attn.num_heads
    assert C == E and E % nh == 0
    hd = E // nh
    M = B * S

    # tokens X (B, S, E), row b * S + s; as the module's (S, B, E): row(l, n) = l * 1 + n * S
    X = k.empty(B, S, E, dtype=x.dtype)
    _transpose(k, x.view(B, C, S), X)
    X2 = X.view(M, E)
    qkv = k.empty(M, 3 * E, dtype=x.dtype)
    _linear(k, attn.in_proj_weight, attn.in_proj_bias, X2, qkv)
    Z = B * nh
    scale = 1.0 / math.sqrt(hd)
    att = k.empty(Z, S, S, dtype=x.dtype)
    k.attn_scores(qkv, att, S, E, nh, hd, 1, S, scale,
                  grid=(k.cdiv(S, TILE), k.cdiv(S, TILE), Z), block=(TILE, TILE))
    rows = Z * S
    k.softmax_rows(att, rows, S, grid=rows, block=BLOCK)
    y = k.empty(M, E, dtype=x.dtype)
    k.attn_values(att, qkv, y, S, E, nh, hd, 1, S,
                  grid=(k.cdiv(hd, TILE), k.cdiv(S, TILE), Z), block=(TILE, TILE))
    r = k.empty(M, E, dtype=x.dtype)
    _linear_residual(k, attn.out_proj, y, X2, r)
    nrm = k.empty(M, E, dtype=x.dtype)
    _layer_norm(k, model.norm, r, nrm)

    out = k.empty(B, C, H, W, dtype=x.dtype)
    _transpose(k, nrm.view(B, S, E), out.view(B, C, S))
    return out
