from torch import nn

TILE = 16  # matches TILE in kernel.cu


def launch(k, model, x):
    layers = list(model.network)
    h = x.contiguous()
    for i, layer in enumerate(layers):
        if isinstance(layer, nn.ReLU):
            assert i > 0 and isinstance(layers[i - 1], nn.Linear)  # fused into that linear
            continue
        assert isinstance(layer, nn.Linear) and layer.bias is not None
        relu = 1 if i + 1 < len(layers) and isinstance(layers[i + 1], nn.ReLU) else 0
        w = layer.weight.contiguous()
        M, K = h.shape
        N = w.shape[0]
        assert w.shape[1] == K
        out = k.empty(M, N, dtype=h.dtype)
        k.linear_bias_act(h, w, layer.bias.contiguous(), out, M, N, K, relu,
                          grid=(k.cdiv(N, TILE), k.cdiv(M, TILE)), block=(TILE, TILE))
        h = out
    return h
