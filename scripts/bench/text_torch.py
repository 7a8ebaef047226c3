"""bench_text's models in PyTorch (CPU, eager), built to match keras.io's "Text classification with
Transformer" classifier (token and position embeddings; one transformer block: 2-head attention with
key_dim 32 per head as Keras's MultiHeadAttention(num_heads=2, key_dim=32), residual + LayerNorm,
feed-forward 32, residual + LayerNorm; average pooling) or the Conv1D classifier, on (batch, 200)
token ids of a 20,000-word vocabulary, cross entropy, Adam, batch 32, random tokens."""
import argparse
import resource
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--model", default="transformer")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--samples", type=int, default=8192)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--threads", type=int, default=2)
args = p.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(1)
maxlen, vocab_size, embed_dim, num_heads, ff_dim = 200, 20000, 32, 2, 32


class Attention(nn.Module):
    """Keras's MultiHeadAttention(num_heads, key_dim): per-head query/key/value projections of
    key_dim each (so heads·key_dim wide, not embed_dim as torch's nn.MultiheadAttention), then one
    output projection back to embed_dim."""

    def __init__(self):
        super().__init__()
        width = num_heads * embed_dim
        self.q, self.k, self.v = nn.Linear(embed_dim, width), nn.Linear(embed_dim, width), nn.Linear(embed_dim, width)
        self.o = nn.Linear(width, embed_dim)

    def forward(self, x):
        b, t, _ = x.shape
        split = lambda y: y.view(b, t, num_heads, embed_dim).transpose(1, 2)  # noqa: E731
        y = nn.functional.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)))
        return self.o(y.transpose(1, 2).reshape(b, t, num_heads * embed_dim))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab_size, embed_dim), nn.Embedding(maxlen, embed_dim)
        self.att = Attention()
        self.ffn = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, embed_dim))
        self.ln1, self.ln2 = nn.LayerNorm(embed_dim, eps=1e-6), nn.LayerNorm(embed_dim, eps=1e-6)
        self.drop1, self.drop2 = nn.Dropout(0.1), nn.Dropout(0.1)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        x = self.ln1(x + self.drop1(self.att(x)))
        x = self.ln2(x + self.drop2(self.ffn(x)))
        return x.mean(dim=1)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, embed_dim)
        self.conv1, self.conv2 = nn.Conv1d(embed_dim, 64, 3), nn.Conv1d(64, 64, 3)

    def forward(self, ids):
        x = self.emb(ids).transpose(1, 2)  # (batch, channels, time)
        x = nn.functional.max_pool1d(torch.relu(self.conv1(x)), 2)
        return torch.relu(self.conv2(x)).amax(dim=2)


model = nn.Sequential(Transformer() if args.model == "transformer" else Conv(), nn.Dropout(0.1), nn.Linear(
    embed_dim if args.model == "transformer" else 64, 20), nn.ReLU(), nn.Dropout(0.1), nn.Linear(20, 2))
x = torch.randint(1, vocab_size, (args.samples, maxlen))
y = torch.randint(0, 2, (args.samples,))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()


def epoch():
    perm = torch.randperm(args.samples)
    for i in range(0, args.samples, args.batch_size):
        idx = perm[i:i + args.batch_size]
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    return loss.item()


model.train()
epoch()  # warm-up
start = time.perf_counter()
for _ in range(args.epochs):
    last = epoch()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"PyTorch {torch.__version__} {args.model} maxlen {maxlen} batch {args.batch_size}: "
      f"{args.samples * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB, loss {last:.4f}")
