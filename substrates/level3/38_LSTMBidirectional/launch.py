BLOCK = 256
TILE = 16  # matches TILE in kernel.cu


def direction_params(lstm, l, suffix):
    """(w_ih, w_hh, b_ih, b_hh) of layer l; suffix "" forward, "_reverse" backward."""
    return tuple(getattr(lstm, f"{name}_l{l}{suffix}").contiguous()
                 for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))


def run_direction(k, params, seq, h0, c0, steps, H):
    """One direction of one layer over seq (T', batch, in), time-major, from h0, c0 (batch, hidden),
    visiting seq's steps in the order `steps`. Returns the hidden states (T', batch, hidden), each
    stored at its own step's index."""
    w_ih, w_hh, b_ih, b_hh = params
    T, B, In = seq.shape
    G = 4 * H
    assert w_ih.shape[1] == In and w_hh.shape[0] == G
    gx = k.empty(T, B, G)
    M = T * B
    k.linear_2bias(seq, w_ih, b_ih, b_hh, gx, M, G, In,
                   grid=(k.cdiv(G, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
    hs = k.empty(T, B, H)
    c = k.empty(B, H)
    prev = None
    for t in steps:
        h_prev = h0 if prev is None else hs[prev]
        c_prev = c0 if prev is None else c
        k.lstm_step(gx[t], h_prev, w_hh, c_prev, hs[t], c, B, H,
                    grid=(k.cdiv(H, TILE), k.cdiv(B, TILE)), block=(TILE, TILE))
        prev = t
    return hs


def launch(k, model, x, h0, c0):
    # h0 and c0 are inputs here (get_inputs draws them), so every layer and direction starts from
    # exactly the reference's states: layer l, direction d (0 forward, 1 backward) reads h0[2l+d].
    x = x.contiguous()
    h0 = h0.contiguous()
    c0 = c0.contiguous()
    lstm = model.lstm
    assert lstm.batch_first and lstm.bidirectional and lstm.bias and lstm.proj_size == 0
    assert lstm.dropout == 0.0 or not lstm.training
    L, H = lstm.num_layers, lstm.hidden_size
    B, T = x.shape[0], x.shape[1]
    assert h0.shape[0] == 2 * L and h0.shape[1] == B and h0.shape[2] == H
    seq = x.transpose(0, 1).contiguous()  # (seq, batch, in): one step's rows are contiguous
    for l in range(L - 1):
        hf = run_direction(k, direction_params(lstm, l, ""), seq, h0[2 * l], c0[2 * l],
                           range(T), H)
        hb = run_direction(k, direction_params(lstm, l, "_reverse"), seq, h0[2 * l + 1], c0[2 * l + 1],
                           range(T - 1, -1, -1), H)
        nxt = k.empty(T, B, 2 * H)
        n = T * B * 2 * H
        k.concat_cols(hf, hb, nxt, T * B, H, H, grid=k.cdiv(n, BLOCK), block=BLOCK)
        seq = nxt
    # Last layer: fc reads only out[:, -1, :]. The forward half needs every step; the backward half
    # at t = seq-1 is the backward direction's first step, from h0/c0, so only that step is run.
    l = L - 1
    hf = run_direction(k, direction_params(lstm, l, ""), seq, h0[2 * l], c0[2 * l], range(T), H)
    tail = seq[T - 1:T]  # (1, batch, in)
    hb = run_direction(k, direction_params(lstm, l, "_reverse"), tail, h0[2 * l + 1], c0[2 * l + 1],
                       range(1), H)
    last = k.empty(B, 2 * H)
    n = B * 2 * H
    k.concat_cols(hf[T - 1], hb[0], last, B, H, H, grid=k.cdiv(n, BLOCK), block=BLOCK)
    N = model.fc.weight.shape[0]
    assert model.fc.weight.shape[1] == 2 * H
    out = k.empty(B, N)
    k.linear_forward(last, model.fc.weight.contiguous(), model.fc.bias.contiguous(), out, B, N, 2 * H,
                     grid=(k.cdiv(N, TILE), k.cdiv(B, TILE)), block=(TILE, TILE))
    return out
