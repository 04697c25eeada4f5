import math

TILE = 16   # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (layer_norm_rows' and softmax_rows' shared arrays)


def _linear(k, layer, h, out, apply_gelu):
    M, K = h.shape
    w = layer.weight.contiguous()
    N = w.shape[0]
    assert w.shape[1] == K and layer.bias is not None
    k.linear_bias_act(h, w, layer.bias.contiguous(), out, M, N, K, apply_gelu,
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
    assert tuple(ln.normalized_shape) == (cols,)
    k.layer_norm_rows(h, ln.weight.contiguous(), ln.bias.contiguous(), out, rows, cols, ln.eps,
                      grid=rows, block=BLOCK)


def launch(k, model, x):
    attn = model.attn
    mlp = model.mlp
    # attn_pdrop = resid_pdrop = 0.0 in this problem: every dropout is the identity (asserted)
    for drop in (attn.attn_dropout, attn.resid_dropout, mlp.dropout):
        assert drop.p == 0.0 or not model.training
    assert type(mlp.act).__name__ == "NewGELU"
    x = x.contiguous()
    B, T, C = x.shape
    nh = attn.n_head
    assert C == attn.n_embd and C % nh == 0
    hs = C // nh
    mask = attn.bias.contiguous()  # (1, 1, max_seqlen, max_seqlen); row stride max_seqlen
    mask_stride = mask.shape[-1]
    assert T <= mask.shape[-2] and T <= mask_stride
    M = B * T
    x2 = x.view(M, C)

    # x1 = x + attn(ln_1(x))
    h1 = k.empty(M, C, dtype=x.dtype)
    _layer_norm(k, model.ln_1, x2, h1)
    qkv = k.empty(M, 3 * C, dtype=x.dtype)
    _linear(k, attn.c_attn, h1, qkv, 0)
    Z = B * nh
    scale = 1.0 / math.sqrt(hs)
    att = k.empty(Z, T, T, dtype=x.dtype)
    k.attn_scores(qkv, mask, att, T, C, nh, hs, mask_stride, scale,
                  grid=(k.cdiv(T, TILE), k.cdiv(T, TILE), Z), block=(TILE, TILE))
    rows = Z * T
    k.softmax_rows(att, rows, T, grid=rows, block=BLOCK)
    y = k.empty(M, C, dtype=x.dtype)
    k.attn_values(att, qkv, y, T, C, nh, hs,
                  grid=(k.cdiv(hs, TILE), k.cdiv(T, TILE), Z), block=(TILE, TILE))
    x1 = k.empty(M, C, dtype=x.dtype)
    _linear_residual(k, attn.c_proj, y, x2, x1)

    # out = x1 + c_proj(gelu(c_fc(ln_2(x1))))
    h2 = k.empty(M, C, dtype=x.dtype)
    _layer_norm(k, model.ln_2, x1, h2)
    hidden = mlp.c_fc.weight.shape[0]
    f = k.empty(M, hidden, dtype=x.dtype)
    _linear(k, mlp.c_fc, h2, f, 1)
    out = k.empty(M, C, dtype=x.dtype)
    _linear_residual(k, mlp.c_proj, f, x1, out)
    return out.view(B, T, C)
