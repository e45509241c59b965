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
