"""Train a small causal language model on token caches with torchrun (docs/tokens.md, "From
Parquet to training with torchrun").

    torchrun --nproc-per-node 2 train_tokens.py web.tokens code.tokens --weights 0.7,0.3 \\
        --seq-len 512 --eos-id 50256 --steps 20 --checkpoint ckpt.pt

Each rank gets its own batches of windows (rank, world size and ranks per node come from
torchrun); their document boundaries reach the model as a block-diagonal causal mask
(``document_attention_mask``) and as ``position_ids`` reset at each document, and the labels
that cross a boundary are ``-100``, which ``cross_entropy`` skips. The loader's state is saved
with the model every ``--checkpoint-every`` steps; rerun the same command to resume exactly
where the checkpoint was taken, on this or another number of ranks (the saved state is
converted by `epoch_state` to one that names no topology).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torchdata.stateful_dataloader import StatefulDataLoader

from datasetrt.torch import TokenStreamingDataset, document_attention_mask


class TinyLM(torch.nn.Module):
    """One attention block: enough to show where each output of a batch goes."""

    def __init__(self, vocab: int, seq_len: int, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.embed = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(seq_len, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, input_ids, position_ids, segment_ids):
        b, s = input_ids.shape
        x = self.embed(input_ids) + self.position(position_ids)
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        mask = document_attention_mask(segment_ids)  # [B, 1, S, S]: each document to itself
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(x + y.transpose(1, 2).reshape(b, s, -1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("caches", nargs="+", help="token cache directories or URLs")
    parser.add_argument("--weights", default=None, help="each cache's share of the tokens")
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--eos-id", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--vocab-size", type=int, default=50257)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--checkpoint", type=Path, default=None)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if cuda else "cpu")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        TinyLM(args.vocab_size, args.seq_len).to(device)
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    dataset = TokenStreamingDataset(
        args.caches,
        seq_len=args.seq_len,
        eos_id=args.eos_id,
        weights=None if args.weights is None else [float(w) for w in args.weights.split(",")],
        batch_size=args.batch_size,
        seed=1234,
    )
    step = 0
    if args.checkpoint is not None and args.checkpoint.exists():
        saved = torch.load(args.checkpoint, weights_only=False)
        model.module.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        # A TokenDataset-style state: valid on any number of ranks and workers.
        dataset.load_state_dict(saved["data"])
        step = saved["step"]
    loader = StatefulDataLoader(dataset, batch_size=None, num_workers=args.workers)

    while step < args.steps:
        for batch in loader:
            input_ids = batch["input_ids"].to(device)
            logits = model(
                input_ids, batch["position_ids"].to(device), batch["segment_ids"].to(device)
            )
            # labels are -100 on padding and where the next token is another document's.
            loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].to(device).flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if rank == 0:
                print(f"step {step}: loss {loss.item():.3f}, windows {batch['steps'].tolist()}")
            if args.checkpoint is not None and step % args.checkpoint_every == 0:
                data = dataset.epoch_state(loader.state_dict())
                if rank == 0:
                    torch.save(
                        {
                            "model": model.module.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "data": data,
                            "step": step,
                        },
                        args.checkpoint,
                    )
            if step == args.steps:
                break
        else:
            dataset.set_epoch(dataset.epoch + 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
