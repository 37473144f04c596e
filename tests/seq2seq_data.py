"""Small random source/target batches shared by the seq2seq and Luong tests."""

import torch

V_SRC, V_TGT = 11, 9


def source_batch(lengths, seed=0):
    gen = torch.Generator().manual_seed(seed)
    s = max(lengths)
    src = torch.randint(1, V_SRC, (len(lengths), s), generator=gen)
    mask = torch.arange(s) < torch.tensor(lengths)[:, None]
    return src.masked_fill(~mask, 0), mask


def target_batch(batch, length, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, V_TGT, (batch, length), generator=gen)
