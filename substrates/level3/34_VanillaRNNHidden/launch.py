BLOCK = 256
TILE = 16  # matches TILE in kernel.cu


def linear(k, kernel, lin, x, y, M):
    """y = act(x @ W^T + b) for nn.Linear `lin`: x holds M rows of K, y M rows of N (contiguous)."""
    N, K = lin.weight.shape
    kernel(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
           grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))


def launch(k, model, x, h0):
    x = x.contiguous()  # (seq_len, batch, input)
    h0 = h0.contiguous()  # (batch, hidden)
    T, B, In = x.shape
    H = h0.shape[1]
    assert model.i2h.weight.shape[1] == In + H
    hs = k.empty(T, B, H)  # hs[t]: the hidden state after step t
    combined = k.empty(B, In + H)
    n = combined.numel()
    for t in range(T):
        h_prev = h0 if t == 0 else hs[t - 1]
        k.concat_cols(x[t], h_prev, combined, B, In, H, grid=k.cdiv(n, BLOCK), block=BLOCK)
        linear(k, k.linear_tanh, model.i2h, combined, hs[t], B)
    # h2o does not feed back: one launch over all seq_len * batch rows of hs.
    out = k.empty(T, B, model.h2o.weight.shape[0])
    linear(k, k.linear_forward, model.h2o, hs, out, T * B)
    return out
