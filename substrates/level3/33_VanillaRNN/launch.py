BLOCK = 256
TILE = 16  # matches TILE in kernel.cu


def linear(k, kernel, lin, x, y):
    """y = act(x @ W^T + b) for nn.Linear `lin`, x (M, K) and y (M, N) contiguous."""
    M, K = x.shape
    N = lin.weight.shape[0]
    kernel(x, lin.weight.contiguous(), lin.bias.contiguous(), y, M, N, K,
           grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))


def launch(k, model, x, initial_hidden):
    # The reference copies initial_hidden into model.hidden (a CPU tensor made in __init__) and
    # moves it to x's device: with initial_hidden given, the step reads exactly initial_hidden.
    # model.hidden is not touched here.
    x = x.contiguous()
    h0 = initial_hidden.contiguous()
    B, In = x.shape
    H = h0.shape[1]
    assert model.i2h.weight.shape[1] == In + H
    combined = k.empty(B, In + H)
    n = combined.numel()
    k.concat_cols(x, h0, combined, B, In, H, grid=k.cdiv(n, BLOCK), block=BLOCK)
    hidden = k.empty(B, model.i2h.weight.shape[0])
    linear(k, k.linear_tanh, model.i2h, combined, hidden)
    out = k.empty(B, model.h2o.weight.shape[0])
    linear(k, k.linear_forward, model.h2o, hidden, out)
    return out
