import math

from torch import nn

TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches BLOCK in kernel.cu (the shared arrays of layer_norm_rows, softmax_rows, mean_tokens)

ACT_NONE, ACT_RELU, ACT_GELU, ACT_SIG16 = 0, 1, 2, 3  # apply_act in kernel.cu


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _identity_dropout(drop, training):
    # every dropout of this problem has p = 0.0 (drop_rate = attn_drop_rate = 0): the identity;
    # drop_path is nn.Identity in every block whatever drop_path_rate says
    assert isinstance(drop, nn.Identity) or drop.p == 0.0 or not training


def _linear(k, layer, h, act):
    M, K = h.shape
    w = layer.weight.contiguous()
    N = w.shape[0]
    assert w.shape[1] == K
    out = k.empty(M, N, dtype=h.dtype)
    grid = (k.cdiv(N, TILE), k.cdiv(M, TILE))
    if layer.bias is not None:
        k.linear_bias_act(h, w, layer.bias.contiguous(), out, M, N, K, act, grid=grid, block=(TILE, TILE))
    else:
        k.linear_nobias_act(h, w, out, M, N, K, act, grid=grid, block=(TILE, TILE))
    return out


def _layer_norm(k, ln, h, res=None):
    rows, cols = h.shape
    assert tuple(ln.normalized_shape) == (cols,) and ln.weight is not None and ln.bias is not None
    out = k.empty(rows, cols, dtype=h.dtype)
    add_res = 1 if res is not None else 0
    k.layer_norm_rows(h, ln.weight.contiguous(), ln.bias.contiguous(), res if res is not None else h, out,
                      rows, cols, float(ln.eps), add_res, grid=rows, block=BLOCK)
    return out


def _patch_embed(k, pe, x):
    conv = pe.proj
    assert conv.groups == 1 and conv.bias is not None and _pair(conv.dilation) == (1, 1)
    n, cin, h, w = x.shape
    cout, _, kh, kw = conv.weight.shape
    sh, sw = _pair(conv.stride)
    ph, pw = _pair(conv.padding)
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    m = n * oh * ow
    y = k.empty(m, cout, dtype=x.dtype)
    k.conv2d_tokens(x, conv.weight.contiguous(), conv.bias.contiguous(), y, n, cin, h, w, cout, oh, ow,
                    kh, kw, sh, sw, ph, pw, grid=(k.cdiv(cout, TILE), k.cdiv(m, TILE)), block=(TILE, TILE))
    if pe.norm is not None:
        y = _layer_norm(k, pe.norm, y)
    return y, oh, ow


def _cpb_table(k, attn):
    """16 * sigmoid(cpb_mlp(relative_coords_table)) as a (table_len, nh) table."""
    fc1, relu, fc2 = attn.cpb_mlp[0], attn.cpb_mlp[1], attn.cpb_mlp[2]
    assert isinstance(fc1, nn.Linear) and isinstance(relu, nn.ReLU) and isinstance(fc2, nn.Linear)
    table = attn.relative_coords_table.contiguous()
    table = table.view(-1, table.shape[-1])
    hid = _linear(k, fc1, table, ACT_RELU)
    return _linear(k, fc2, hid, ACT_SIG16)  # the 16 * sigmoid of the gathered bias, applied per entry


def _window_attention(k, attn, xw, mask, B_, T):
    M, C = xw.shape
    nh = attn.num_heads
    assert C == attn.dim and C % nh == 0 and M == B_ * T
    hs = C // nh
    _identity_dropout(attn.attn_drop, attn.training)
    _identity_dropout(attn.proj_drop, attn.training)
    assert attn.q_bias is not None and attn.v_bias is not None  # qkv_bias = True in this problem
    wqkv = attn.qkv.weight.contiguous()
    assert tuple(wqkv.shape) == (3 * C, C)
    qkv = k.empty(M, 3 * C, dtype=xw.dtype)
    k.linear_qkv(xw, wqkv, attn.q_bias.contiguous(), attn.v_bias.contiguous(), qkv, M, C,
                 grid=(k.cdiv(3 * C, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    vecs = M * 2 * nh
    k.qk_normalize(qkv, vecs, C, nh, hs, grid=k.cdiv(vecs, BLOCK), block=BLOCK)

    rpb = _cpb_table(k, attn)
    rpi = attn.relative_position_index.contiguous()
    assert tuple(rpi.shape) == (T, T)
    if mask is not None:
        mask = mask.contiguous()
        nW = mask.shape[0]
        assert tuple(mask.shape[1:]) == (T, T) and B_ % nW == 0
        has_mask = 1
    else:
        mask = rpb  # not read: has_mask = 0
        nW = 1
        has_mask = 0
    Z = B_ * nh
    att = k.empty(Z, T, T, dtype=xw.dtype)
    max_log = math.log(1.0 / 0.01)
    k.attn_scores(qkv, attn.logit_scale.contiguous(), rpb, rpi, mask, att, T, C, nh, hs, nW, has_mask,
                  max_log, grid=(k.cdiv(T, TILE), k.cdiv(T, TILE), Z), block=(TILE, TILE))
    rows = Z * T
    k.softmax_rows(att, rows, T, grid=rows, block=BLOCK)
    y = k.empty(M, C, dtype=xw.dtype)
    k.attn_values(att, qkv, y, T, C, nh, hs,
                  grid=(k.cdiv(hs, TILE), k.cdiv(T, TILE), Z), block=(TILE, TILE))
    return _linear(k, attn.proj, y, ACT_NONE)


def _block(k, blk, x, B):
    H, W = blk.input_resolution
    L, C = x.shape[0] // B, x.shape[1]
    assert L == H * W
    wsz = blk.window_size
    shift = blk.shift_size
    assert H % wsz == 0 and W % wsz == 0 and _pair(blk.attn.window_size) == (wsz, wsz)
    assert isinstance(blk.drop_path, nn.Identity)
    total = x.numel()
    xw = k.empty(B * L, C, dtype=x.dtype)
    k.window_partition_roll(x, xw, H, W, C, wsz, shift, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    T = wsz * wsz
    B_ = B * L // T
    aw = _window_attention(k, blk.attn, xw, blk.attn_mask, B_, T)
    xa = k.empty(B * L, C, dtype=x.dtype)
    k.window_reverse_roll(aw, xa, H, W, C, wsz, shift, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    x = _layer_norm(k, blk.norm1, xa, res=x)  # x = shortcut + norm1(attn)

    mlp = blk.mlp
    _identity_dropout(mlp.drop, mlp.training)
    assert isinstance(mlp.act, nn.GELU) and mlp.act.approximate == "none"
    f = _linear(k, mlp.fc1, x, ACT_GELU)
    f = _linear(k, mlp.fc2, f, ACT_NONE)
    return _layer_norm(k, blk.norm2, f, res=x)  # x = x + norm2(mlp(x))


def _patch_merging(k, pm, x, B):
    H, W = pm.input_resolution
    L, C = x.shape[0] // B, x.shape[1]
    assert L == H * W and H % 2 == 0 and W % 2 == 0
    Lo = (H // 2) * (W // 2)
    g = k.empty(B * Lo, 4 * C, dtype=x.dtype)
    total = g.numel()
    k.patch_merge_gather(x, g, H, W, C, total, grid=k.cdiv(total, BLOCK), block=BLOCK)
    r = _linear(k, pm.reduction, g, ACT_NONE)
    return _layer_norm(k, pm.norm, r)


def launch(k, model, x):
    x = x.contiguous()
    B = x.shape[0]
    _identity_dropout(model.pos_drop, model.training)
    h, _, _ = _patch_embed(k, model.patch_embed, x)  # (B * L, C), token-major
    for layer in model.layers:
        for blk in layer.blocks:
            h = _block(k, blk, h, B)
        if layer.downsample is not None:
            h = _patch_merging(k, layer.downsample, h, B)
    h = _layer_norm(k, model.norm, h)
    C = h.shape[1]
    L = h.shape[0] // B
    pooled = k.empty(B, C, dtype=h.dtype)
    k.mean_tokens(h, pooled, B, L, C, grid=B * C, block=BLOCK)
    if isinstance(model.head, nn.Identity):
        return pooled
    return _linear(k, model.head, pooled, ACT_NONE)
