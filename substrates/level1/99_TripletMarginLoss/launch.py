BLOCK = 256  # matches s_pos[256] / s_neg[256] in kernel.cu


def launch(k, model, anchor, positive, negative):
    loss_fn = model.loss_fn
    if loss_fn.swap or loss_fn.reduction != "mean":
        raise ValueError("triplet_rows handles swap=False with reduction='mean'")
    if anchor.dim() != 2 or positive.shape != anchor.shape or negative.shape != anchor.shape:
        raise ValueError("triplet_rows expects three (N, D) tensors")
    anchor = anchor.contiguous()
    positive = positive.contiguous()
    negative = negative.contiguous()
    rows, cols = anchor.shape
    row_loss = k.empty(rows)
    k.triplet_rows(anchor, positive, negative, row_loss, rows, cols, loss_fn.margin, loss_fn.p, loss_fn.eps,
                   grid=rows, block=BLOCK)
    out = k.empty()
    k.mean_finish(row_loss, out, rows, rows, grid=1, block=BLOCK)
    return out
