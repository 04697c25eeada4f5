import math

TILE = 16   # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (softmax_rows' shared array)


def launch(k, model, x):
    # attn_pdrop = resid_pdrop = 0.0 in this problem: both dropouts are the identity (asserted)
    assert model.attn_dropout.p == 0.0 or not model.training
    assert model.resid_dropout.p == 0.0 or not model.training
    x = x.contiguous()
    B, T, C = x.shape
    nh = model.n_head
    assert C == model.n_embd and C % nh == 0
    hs = C // nh
    mask = model.bias.contiguous()  # (1, 1, max_seqlen, max_seqlen); row stride max_seqlen
    mask_stride = mask.shape[-1]
    assert T <= mask.shape[-2] and T <= mask_stride
    M = B * T
    x2 = x.view(M, C)

    w_attn = model.c_attn.weight.contiguous()
    qkv = k.empty(M, 3 * C, dtype=x.dtype)
    k.linear_bias(x2, w_attn, model.c_attn.bias.contiguous(), qkv, M, 3 * C, C,
                  grid=(k.cdiv(3 * C, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))

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

    w_proj = model.c_proj.weight.contiguous()
    out = k.empty(M, C, dtype=x.dtype)
    k.linear_bias(y, w_proj, model.c_proj.bias.contiguous(), out, M, C, C,
                  grid=(k.cdiv(C, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    return out.view(B, T, C)
