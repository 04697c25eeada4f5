BLOCK = 256
TILE = 16  # matches TILE in kernel.cu


def lstm_layers(k, lstm, x, h0, c0, cn=None):
    """Run every layer of `lstm` (batch_first) on x (batch, seq, in) from h0, c0 (layers, batch,
    hidden). Returns the last layer's hidden states, time-major (seq, batch, hidden), and each
    layer's final hidden state. With `cn` (layers, batch, hidden) the cell states are kept there."""
    assert lstm.batch_first and not lstm.bidirectional and lstm.bias and lstm.proj_size == 0
    assert lstm.dropout == 0.0 or not lstm.training
    L, H = lstm.num_layers, lstm.hidden_size
    B, T = x.shape[0], x.shape[1]
    seq = x.transpose(0, 1).contiguous()  # (seq, batch, in): one step's rows are contiguous
    finals = []
    for l in range(L):
        w_ih = getattr(lstm, f"weight_ih_l{l}").contiguous()
        w_hh = getattr(lstm, f"weight_hh_l{l}").contiguous()
        b_ih = getattr(lstm, f"bias_ih_l{l}").contiguous()
        b_hh = getattr(lstm, f"bias_hh_l{l}").contiguous()
        In = seq.shape[2]
        G = 4 * H
        assert w_ih.shape[1] == In and w_hh.shape[0] == G
        gx = k.empty(T, B, G)
        M = T * B
        k.linear_2bias(seq, w_ih, b_ih, b_hh, gx, M, G, In,
                       grid=(k.cdiv(G, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
        hs = k.empty(T, B, H)
        c = cn[l] if cn is not None else k.empty(B, H)
        for t in range(T):
            h_prev = h0[l] if t == 0 else hs[t - 1]
            c_prev = c0[l] if t == 0 else c
            k.lstm_step(gx[t], h_prev, w_hh, c_prev, hs[t], c, B, H,
                        grid=(k.cdiv(H, TILE), k.cdiv(B, TILE)), block=(TILE, TILE))
        finals.append(hs[T - 1])
        seq = hs
    return seq, finals



def launch(k, model, x, h0, c0):
    x = x.contiguous()
    h0 = h0.contiguous()
    c0 = c0.contiguous()
    # The reference also applies model.fc to out[:, -1, :] but returns state[1] = c_n only,
    # so the dead fc is not computed. Each layer's cell state lives in cn[l] from step 0 on.
    L, B, H = c0.shape
    cn = k.empty(L, B, H)
    lstm_layers(k, model.lstm, x, h0, c0, cn)
    return cn
