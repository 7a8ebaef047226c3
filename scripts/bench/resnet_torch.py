"""apps/bench_resnet.cpp's ResNet-20 (He et al. 2016, CIFAR variant) in PyTorch: training samples/s on
random 32x32x3 images at --batch-size, with SGD and momentum, in float32, TF32 (--tf32), automatic mixed
precision (--amp float16 with a GradScaler, or --amp bfloat16), eager or --compile (torch.compile),
channels_last memory format (NHWC, as tower's) on a GPU. Prints the line scripts/gpu/bench.sh sets
beside tower's."""
import argparse
import resource
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=512)
parser.add_argument("--samples", type=int, default=10240)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--blocks", type=int, default=3, help="residual blocks per stage (3: ResNet-20)")
parser.add_argument("--device", default="cpu", help="cpu or cuda")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--tf32", action="store_true", help="float32 matmuls and convolutions in TF32")
parser.add_argument("--amp", default="none", choices=["none", "float16", "bfloat16"])
parser.add_argument("--compile", action="store_true", help="torch.compile the model")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(1)
device = torch.device(args.device)
torch.backends.cuda.matmul.allow_tf32 = args.tf32
torch.backends.cudnn.allow_tf32 = args.tf32
torch.backends.cudnn.benchmark = True


def conv_bn(cin, cout, k, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))) + self.shortcut(x))


layers = [conv_bn(3, 16, 3, 1), nn.ReLU()]
cin = 16
for stage in range(3):
    for b in range(args.blocks):
        cout = 16 << stage
        layers.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
        cin = cout
layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
model = nn.Sequential(*layers).to(device)
if device.type == "cuda":
    model = model.to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
forward = torch.compile(model) if args.compile else model
amp_dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(args.amp)
scaler = torch.amp.GradScaler(device.type, enabled=args.amp == "float16")

n = args.samples - args.samples % args.batch_size
x = torch.rand(n, 3, 32, 32)
y = torch.arange(n) * 7 % 10
if device.type == "cuda":
    x, y = x.pin_memory(), y.pin_memory()


def train_step(start):
    xb = x[start:start + args.batch_size].to(device, non_blocking=True)
    yb = y[start:start + args.batch_size].to(device, non_blocking=True)
    if device.type == "cuda":
        xb = xb.contiguous(memory_format=torch.channels_last)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
        loss = loss_fn(forward(xb), yb)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


model.train()
for _ in range(3):  # warm-up: cuDNN's benchmark choices, torch.compile's compilation
    train_step(0).item()
start = time.perf_counter()
for _ in range(args.epochs):
    for s in range(0, n, args.batch_size):
        loss = train_step(s)
loss = loss.item()  # synchronises the GPU
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
gpu = f", {device} peak {torch.cuda.max_memory_allocated() // 2**20} MiB" if device.type == "cuda" else ""
mode = (" torch.compile" if args.compile else " eager") + (" tf32" if args.tf32 else "") + \
    (f" amp {args.amp}" if amp_dtype is not None else "")
print(f"pytorch{mode} resnet{6 * args.blocks + 2} on {device} batch {args.batch_size}: "
      f"{n * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB{gpu}, loss {loss:.4f}")
