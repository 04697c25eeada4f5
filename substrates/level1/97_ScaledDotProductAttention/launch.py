import math

TILE = 16    # matches TILE in kernel.cu
BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, Q, K, V):
    if Q.shape[:-2] != K.shape[:-2] or K.shape[:-2] != V.shape[:-2] or K.shape[-2] != V.shape[-2] \
            or Q.shape[-1] != K.shape[-1]:
        raise ValueError("attention kernels expect Q (..., Lq, E), K (..., Lk, E), V (..., Lk, Ev)")
    Q = Q.contiguous()
    K = K.contiguous()
    V = V.contiguous()
    lq, e = Q.shape[-2], Q.shape[-1]
    lk, ev = V.shape[-2], V.shape[-1]
    bh = 1
    for s in Q.shape[:-2]:
        bh *= s
    scale = 1.0 / math.sqrt(e)  # SDPA's default scale
    scores = k.empty(bh, lq, lk)
    k.attn_scores(Q, K, scores, lq, lk, e, scale,
                  grid=(k.cdiv(lk, TILE), k.cdiv(lq, TILE), bh), block=(TILE, TILE))
    probs = k.empty(bh, lq, lk)
    k.softmax_rows(scores, probs, bh * lq, lk, grid=bh * lq, block=BLOCK)
    out = k.empty(*Q.shape[:-1], ev)
    k.attn_output(probs, V, out, lq, lk, ev,
                  grid=(k.cdiv(ev, TILE), k.cdiv(lq, TILE), bh), block=(TILE, TILE))
    return out
