"""Tiny models and batches shared by the masking tests (seconds on a CPU)."""

import torch
from transformers import BertConfig, BertForSequenceClassification


def tiny_bert(seed=0, layers=2):
    """A randomly initialised 3-class BERT: hidden 16, 2 heads, FFN 32, vocabulary of 50."""
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, num_labels=3)
    return BertForSequenceClassification(config).eval()


class RandomBatches(torch.utils.data.Dataset):
    """16 random token sequences with labels i % 3, in the shape ``train.fit`` expects."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return i

    def collate(self, indices):
        g = torch.Generator().manual_seed(sum(indices))
        ids = torch.randint(5, 50, (len(indices), 8), generator=g)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
                "labels": torch.tensor([i % 3 for i in indices]), "index": torch.tensor(indices)}


class FeatureBatches(torch.utils.data.Dataset):
    """``n`` seeded random feature tensors of ``shape`` with labels i % ``classes``: batches ``{"x", "labels",
    "index"}`` for models that take one tensor (a Linear, a small conv net)."""

    def __init__(self, n=16, shape=(4,), classes=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, *shape, generator=g)
        self.labels = torch.arange(n) % classes

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return i

    def collate(self, indices):
        index = torch.tensor(indices)
        return {"x": self.x[index], "labels": self.labels[index], "index": index}


def tiny_conv_net(seed=0, classes=2):
    """conv (3 -> 4 channels, 3x3) -> BatchNorm2d -> ReLU -> fc, on 3 x 6 x 6 inputs; module names as the vision
    family's kinds expect (``conv``, ``fc``)."""
    from collections import OrderedDict

    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(OrderedDict(conv=nn.Conv2d(3, 4, 3), bn=nn.BatchNorm2d(4), relu=nn.ReLU(),
                                     flat=nn.Flatten(), fc=nn.Linear(4 * 4 * 4, classes)))
