from torch import nn

TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (layer_norm_rows' and mean_tokens' shared arrays)


def _check_identity(drop):
    # drop_rate = 0 and SwinMLPBlock's drop_path is nn.Identity: every dropout is the identity
    assert isinstance(drop, nn.Identity) or drop.p == 0.0 or not drop.training


def _layer_norm(k, ln, h, out):
    rows, cols = h.shape
    assert tuple(ln.normalized_shape) == (cols,)
    k.layer_norm_rows(h, ln.weight.contiguous(), ln.bias.contiguous(), out, rows, cols, ln.eps,
                      grid=rows, block=BLOCK)


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


def _block(k, blk, x, B):
    # x (B*H*W, C) -> (B*H*W, C)
    H, W = blk.input_resolution
    M, C = x.shape
    assert M == B * H * W
    nH = blk.num_heads
    ws = blk.window_size
    assert C % nH == 0
    if blk.shift_size > 0:
        P_l, P_r, P_t, P_b = blk.padding
    else:
        P_l, P_r, P_t, P_b = 0, 0, 0, 0  # no padding without a shift
    Hp = H + P_t + P_b
    Wp = W + P_l + P_r
    assert Hp % ws == 0 and Wp % ws == 0
    nwin = (Hp // ws) * (Wp // ws)
    sp = blk.spatial_mlp
    assert sp.groups == nH and tuple(sp.weight.shape) == (nH * ws * ws, ws * ws, 1)
    _check_identity(blk.drop_path)
    _check_identity(blk.mlp.drop)
    assert isinstance(blk.mlp.act, nn.GELU) and blk.mlp.act.approximate == "none"

    # x1 = x + spatial_mlp(norm1(x)) (shift padding, windows and crop inside the kernel)
    xn = k.empty(M, C, dtype=x.dtype)
    _layer_norm(k, blk.norm1, x, xn)
    x1 = k.empty(M, C, dtype=x.dtype)
    hd = C // nH
    k.spatial_mlp(xn, sp.weight.contiguous(), sp.bias.contiguous(), x, x1, H, W, C, nH, ws,
                  P_t, P_l, Hp, Wp,
                  grid=(k.cdiv(hd, TILE), k.cdiv(ws * ws, TILE), B * nwin * nH), block=(TILE, TILE))

    # out = x1 + fc2(gelu(fc1(norm2(x1))))
    h = k.empty(M, C, dtype=x.dtype)
    _layer_norm(k, blk.norm2, x1, h)
    hidden = blk.mlp.fc1.weight.shape[0]
    f = k.empty(M, hidden, dtype=x.dtype)
    _linear(k, blk.mlp.fc1, h, f, 1)
    out = k.empty(M, C, dtype=x.dtype)
    _linear_residual(k, blk.mlp.fc2, f, x1, out)
    return out


def _patch_merging(k, pm, x, B):
    H, W = pm.input_resolution
    M, C = x.shape
    assert M == B * H * W and H % 2 == 0 and W % 2 == 0
    M2 = B * (H // 2) * (W // 2)
    g = k.empty(M2, 4 * C, dtype=x.dtype)
    n = g.numel()
    k.patch_merge_gather(x, g, n, H, W, C, grid=k.cdiv(n, BLOCK), block=BLOCK)
    gn = k.empty(M2, 4 * C, dtype=x.dtype)
    _layer_norm(k, pm.norm, g, gn)
    w = pm.reduction.weight.contiguous()
    assert pm.reduction.bias is None and w.shape[1] == 4 * C
    N = w.shape[0]
    out = k.empty(M2, N, dtype=x.dtype)
    k.linear_nobias(gn, w, out, M2, N, 4 * C,
                    grid=(k.cdiv(N, TILE), k.cdiv(M2, TILE)), block=(TILE, TILE))
    return out


def launch(k, model, x):
    x = x.contiguous()
    B, Cin, Hin, Win = x.shape
    pe = model.patch_embed
    conv = pe.proj
    assert tuple(conv.padding) == (0, 0) and tuple(conv.dilation) == (1, 1) and conv.groups == 1
    assert (Hin, Win) == tuple(pe.img_size)
    Cout, _, kh, kw = conv.weight.shape
    sh, sw = conv.stride
    Ho = (Hin - kh) // sh + 1
    Wo = (Win - kw) // sw + 1
    M = B * Ho * Wo
    h = k.empty(M, Cout, dtype=x.dtype)
    k.patch_embed_gemm(x, conv.weight.contiguous(), conv.bias.contiguous(), h, B, Cin, Hin, Win,
                       kh, kw, sh, sw, Ho, Wo, Cout,
                       grid=(k.cdiv(Cout, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    if pe.norm is not None:
        hn = k.empty(M, Cout, dtype=x.dtype)
        _layer_norm(k, pe.norm, h, hn)
        h = hn
    _check_identity(model.pos_drop)

    for layer in model.layers:
        for blk in layer.blocks:
            h = _block(k, blk, h, B)
        if layer.downsample is not None:
            h = _patch_merging(k, layer.downsample, h, B)

    M, C = h.shape
    L = M // B
    hn = k.empty(M, C, dtype=x.dtype)
    _layer_norm(k, model.norm, h, hn)
    pooled = k.empty(B, C, dtype=x.dtype)
    k.mean_tokens(hn, pooled, B * C, L, C, grid=B * C, block=BLOCK)
    assert isinstance(model.head, nn.Linear)
    N = model.head.weight.shape[0]
    out = k.empty(B, N, dtype=x.dtype)
    _linear(k, model.head, pooled, out, 0)
    return out
