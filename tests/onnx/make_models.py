#!/usr/bin/python3
"""Builds the PyTorch models the ONNX import tests use and exports them to ONNX.

Run with Debian's interpreter (/usr/bin/python3: python3-torch, python3-torchvision,
python3-onnx, python3-sklearn). No network: datasets come from scikit-learn's bundled
digits, torchvision models get random weights (weights=None).

  make_models.py digits OUT      small CNN trained on digits; calib/test .npy, float results
  make_models.py vit OUT [--opset N]   small conv-stem vision transformer trained on digits
  make_models.py torchvision NAME OUT [--size S] [--opset N]   random-weight torchvision model
  make_models.py se OUT                                       SiLU / sigmoid / squeeze-excite block
  make_models.py ops OUT         one small module per ONNX op pattern, with input and output

Every command writes OUT/model.onnx (ops: OUT/<case>/model.onnx) and OUT/info.json.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def save(path, array):
    np.save(path, np.ascontiguousarray(array))


def digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0 - 0.5) / 0.5  # [-1, 1]
    x = x[:, None, :, :]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


def train(model, x_train, y_train, epochs, lr):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xt = torch.from_numpy(x_train)
    yt = torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = F.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()


def evaluate(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


class DigitsCnn(nn.Module):
    """Conv-BN-ReLU blocks, a residual add, max pool and a flatten over a 4x4 map, so the
    importer's BN folding, NCHW flatten order and Gemm paths are all exercised."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(x + self.bn2(self.conv2(x)))
        x = self.pool(x)
        x = F.relu(self.conv3(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class Attention(nn.Module):
    """Multi-head self attention written the way timm writes it (one qkv linear, reshape,
    permute, then qkv[0..2]: Gather in the export)."""

    def __init__(self, dim, heads, unbind):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.unbind = unbind

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if self.unbind:
            q, k, v = qkv.unbind(0)
        else:
            q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class Block(nn.Module):
    def __init__(self, dim, heads, unbind):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, unbind)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ConvVit(nn.Module):
    """A vision transformer with a convolutional stem: conv-BN-ReLU, a stride-2 patch conv
    (8x8 -> 4x4 = 16 tokens), a class token, position embeddings, two pre-norm blocks and
    a head on the class token."""

    def __init__(self, dim=32, heads=2, depth=2, unbind=False):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.patch = nn.Conv2d(16, dim, 2, stride=2)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads, unbind) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch(self.stem(x))  # [b, dim, 4, 4]
        x = x.flatten(2).transpose(1, 2)  # [b, 16, dim]
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def export(model, example, path, opset, fold=True):
    # fold=False keeps BatchNormalization nodes (inference mode) for the importer to fold.
    mode = torch.onnx.TrainingMode.EVAL if fold else torch.onnx.TrainingMode.PRESERVE
    torch.onnx.export(model, example, path, opset_version=opset, do_constant_folding=fold,
                      training=mode, input_names=["input"], output_names=["output"])


def trained_digits_model(model, out, opset, epochs, lr, fold=True, extra_export=None):
    x_train, x_test, y_train, y_test = digits_split()
    train(model, x_train, y_train, epochs, lr)
    logits = evaluate(model, x_test)
    accuracy = float((logits.argmax(1) == y_test).mean() * 100.0)
    os.makedirs(out, exist_ok=True)
    export(model, torch.from_numpy(x_test[:1]), os.path.join(out, "model.onnx"), opset, fold)
    if extra_export:
        extra_export(model, torch.from_numpy(x_test[:1]))
    os.makedirs(os.path.join(out, "calib"), exist_ok=True)
    save(os.path.join(out, "calib", "train.npy"), x_train[:256])  # [256, 1, 8, 8]: 256 inputs
    save(os.path.join(out, "test_x.npy"), x_test)
    save(os.path.join(out, "test_y.npy"), y_test)
    save(os.path.join(out, "test_logits.npy"), logits)
    return {"float_top1": accuracy, "test_count": int(len(y_test)), "opset": opset}


def cmd_digits(args):
    torch.manual_seed(0)
    # Export without torch's constant folding so the BatchNormalization nodes reach the
    # importer, which must fold them itself.
    info = trained_digits_model(DigitsCnn(), args.out, args.opset, epochs=15, lr=3e-3,
                                fold=False)
    return info


def cmd_vit(args):
    torch.manual_seed(0)
    def second_export(model, example):
        # The same weights with q, k, v taken by unbind (Split) and native LayerNormalization.
        for block in model.blocks:
            block.attn.unbind = True
        export(model, example, os.path.join(args.out, "model_unbind17.onnx"), 17)

    info = trained_digits_model(ConvVit(), args.out, args.opset, epochs=12, lr=2e-3,
                                extra_export=second_export)
    return info


def cmd_torchvision(args):
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.name)(weights=None).eval()
    x = torch.randn(1, 3, args.size, args.size)
    os.makedirs(args.out, exist_ok=True)
    export(model, x, os.path.join(args.out, "model.onnx"), args.opset)
    save(os.path.join(args.out, "input.npy"), x.numpy())
    save(os.path.join(args.out, "output.npy"), evaluate(model, x.numpy()))
    return {"name": args.name, "size": args.size, "opset": args.opset}


class SqueezeExciteNet(nn.Module):
    """An EfficientNet-style block on a small map: conv-BN-SiLU, depthwise 3x3-BN-SiLU,
    squeeze-excitation (global pool, 1x1 conv, SiLU, 1x1 conv, sigmoid, multiply), a 1x1
    projection, a global pool and a classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False),
                                nn.BatchNorm2d(16), nn.SiLU())
        self.se_reduce = nn.Conv2d(16, 4, 1)
        self.se_expand = nn.Conv2d(4, 16, 1)
        self.project = nn.Sequential(nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24))
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = self.dw(self.stem(x))
        s = x.mean((2, 3), keepdim=True)
        s = torch.sigmoid(self.se_expand(nn.functional.silu(self.se_reduce(s))))
        x = self.project(x * s)
        return self.fc(x.mean((2, 3)))


def cmd_se(args):
    torch.manual_seed(0)
    model = SqueezeExciteNet().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 3, 32, 32)
    os.makedirs(args.out, exist_ok=True)
    export(model, x, os.path.join(args.out, "model.onnx"), 13)
    return {"name": "se", "size": 32}


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("digits")
    p.add_argument("out")
    p.add_argument("--opset", type=int, default=13)
    p = sub.add_parser("vit")
    p.add_argument("out")
    p.add_argument("--opset", type=int, default=13)
    p = sub.add_parser("torchvision")
    p.add_argument("name")
    p.add_argument("out")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--opset", type=int, default=13)
    p = sub.add_parser("se")
    p.add_argument("out")
    p = sub.add_parser("ops")
    p.add_argument("out")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "ops":
        import op_cases
        info = op_cases.export_all(args.out)
    else:
        info = {"digits": cmd_digits, "vit": cmd_vit, "torchvision": cmd_torchvision,
                "se": cmd_se}[args.command](args)
    with open(os.path.join(args.out, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
