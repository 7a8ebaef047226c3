"""The bench_rnn model in PyTorch (CPU, eager): LSTM or GRU (batch_first) over 50 steps of 32 features,
Linear(10), cross entropy, Adam, batch 128, random data. Prints samples/s and peak RSS."""
import argparse
import resource
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--cell", default="lstm")
p.add_argument("--batch-size", type=int, default=128)
p.add_argument("--samples", type=int, default=4096)
p.add_argument("--steps", type=int, default=50)
p.add_argument("--units", type=int, default=128)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--threads", type=int, default=2)
args = p.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(1)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        rnn = torch.nn.LSTM if args.cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(32, args.units, batch_first=True)
        self.out = torch.nn.Linear(args.units, 10)

    def forward(self, x):
        _, h = self.rnn(x)
        h = h[0] if isinstance(h, tuple) else h
        return self.out(h[-1])  # logits; CrossEntropyLoss applies the softmax


x = torch.randn(args.samples, args.steps, 32)
y = torch.arange(args.samples) % 10
model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()


def epoch():
    perm = torch.randperm(args.samples)
    for i in range(0, args.samples, args.batch_size):
        idx = perm[i:i + args.batch_size]
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
    return loss.item()


epoch()  # warm-up
start = time.perf_counter()
for _ in range(args.epochs):
    last = epoch()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"PyTorch {torch.__version__} {args.cell}({args.units}) steps {args.steps} batch {args.batch_size}: "
      f"{args.samples * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB, loss {last:.4f}")
