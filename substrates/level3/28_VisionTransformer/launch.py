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


def launch(k, model, img):
    assert model.dropout.p == 0.0 or not model.training
    img = img.contiguous()
    p = model.patch_size
    B, C, H, W = img.shape
    nph, npw = H // p, W // p          # unfold drops a remainder
    NP = nph * npw
    PD = C * p * p
    D = model.pos_embedding.shape[-1]
    assert model.pos_embedding.shape[1] == NP + 1

    # x = img.unfold(2, p, p).unfold(3, p, p).reshape(B, -1, p*p*C); x = patch_to_embedding(x)
    P = k.empty(B * NP, PD, dtype=img.dtype)
    n = P.numel()
    k.unfold_patches(img, P, B, C, H, W, p, nph, npw, grid=k.cdiv(n, BLOCK), block=BLOCK)
    emb = k.empty(B * NP, D, dtype=img.dtype)
    _linear(k, model.patch_to_embedding, P, emb, 0)

    # cat(cls, x) + pos_embedding
    T = NP + 1
    x = k.empty(B, T, D, dtype=img.dtype)
    n = x.numel()
    k.embed_tokens(model.cls_token.contiguous(), emb, model.pos_embedding.contiguous(), x, B, NP, D,
                   grid=k.cdiv(n, BLOCK), block=BLOCK)

    # nn.TransformerEncoder: its layers in turn (no final norm); the layers are sequence-first,
    # so they attend across the B images for each token position
    assert model.transformer.norm is None
    for layer in model.transformer.layers:
        x = _encoder_layer(k, layer, x)

    # mlp_head(x[:, 0]): Linear, GELU, Dropout, Linear
    head = list(model.mlp_head)
    assert len(head) == 4 and type(head[1]).__name__ == "GELU" and head[1].approximate == "none"
    assert head[2].p == 0.0 or not model.training
    c = _take_token(k, x, 0)
    hidden = head[0].weight.shape[0]
    h = k.empty(B, hidden, dtype=img.dtype)
    _linear(k, head[0], c, h, 2)
    ncls = head[3].weight.shape[0]
    out = k.empty(B, ncls, dtype=img.dtype)
    _linear(k, head[3], h, out, 0)
    return out
