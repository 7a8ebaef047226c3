"""The mnist_mlp / mnist_cnn example models in PyTorch (eager, or torch.compile with --compile; CPU or
--device cuda): training samples/s and peak RSS (and peak GPU memory). Same layers, optimizer, loss and batch size as apps/bench_mnist.cpp;
on a GPU the data stays in pinned host memory and each batch is copied over, as tower's fit does."""
import resource
import time

import torch
from torch import nn

import mnist_data

args = mnist_data.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(1)

x, y = mnist_data.load(args.data, args.samples)
device = torch.device(args.device)
if args.model == "mlp":
    x = x.reshape(-1, 784)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 512), nn.ReLU(),
                          nn.Dropout(0.2), nn.Linear(512, 10)).to(device)
    # Keras RMSprop defaults: lr 0.001, rho 0.9, epsilon 1e-7.
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.001, alpha=0.9, eps=1e-7)
else:
    x = x.reshape(-1, 1, 28, 28)  # PyTorch's fast layout is NCHW
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(128, 10)).to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.95, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()  # softmax + categorical crossentropy, as the Keras models
forward = torch.compile(model) if args.compile else model  # compiled during the warm-up steps
x, y = torch.from_numpy(x), torch.from_numpy(y)
if device.type == "cuda":
    torch.backends.cuda.matmul.allow_tf32 = False  # full FP32, as tower
    torch.backends.cudnn.allow_tf32 = False
    x, y = x.pin_memory(), y.pin_memory()
n = x.shape[0]


def train_step(idx):
    optimizer.zero_grad()
    xb, yb = x[idx].to(device, non_blocking=True), y[idx].to(device, non_blocking=True)
    loss = loss_fn(forward(xb), yb)
    loss.backward()
    optimizer.step()
    return loss


def epoch(limit=None):
    perm = torch.randperm(n)
    loss = None
    for step, start in enumerate(range(0, n, args.batch_size)):
        if limit is not None and step >= limit:
            break
        loss = train_step(perm[start:start + args.batch_size])
    return float(loss)


model.train()
epoch(limit=2)  # warm-up: a full batch, and (for torch.compile's shapes) the last partial one
if n % args.batch_size:
    float(train_step(torch.arange(n % args.batch_size)))
start = time.perf_counter()
for _ in range(args.epochs):
    loss = epoch()
seconds = time.perf_counter() - start  # float(loss) synchronised the GPU
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
gpu = ""
if device.type == "cuda":
    gpu = (f", {device} peak {torch.cuda.max_memory_allocated() // 2**20} MiB"
           f" (reserved {torch.cuda.max_memory_reserved() // 2**20} MiB)")
mode = " torch.compile" if args.compile else ""
print(f"pytorch{mode} {args.model} batch {args.batch_size} on {device}: {n * args.epochs / seconds:.1f} samples/s, "
      f"peak RSS {peak} MiB{gpu}, loss {loss:.4f}")
