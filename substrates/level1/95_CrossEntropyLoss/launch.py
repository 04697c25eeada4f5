BLOCK = 256  # matches sdata[256] in kernel.cu


def launch(k, model, predictions, targets):
    if predictions.dim() != 2 or targets.dim() != 1:
        raise ValueError("cross_entropy_rows expects (N, C) logits and (N,) class indices")
    predictions = predictions.contiguous()
    targets = targets.contiguous()
    rows, cols = predictions.shape
    row_loss = k.empty(rows)
    k.cross_entropy_rows(predictions, targets, row_loss, rows, cols, grid=rows, block=BLOCK)
    out = k.empty()
    k.mean_finish(row_loss, out, rows, rows, grid=1, block=BLOCK)
    return out
