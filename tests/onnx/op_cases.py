"""Small PyTorch modules, one per ONNX op pattern the importer maps (cases named
unsupported_* must be rejected with a clear error). Each case is exported
to OUT/<case>/model.onnx with a random input (input.npy) and PyTorch's output (output.npy),
so the C++ test can check the imported graph against PyTorch element by element."""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Lambda(nn.Module):
    def __init__(self, fn, *mods):
        super().__init__()
        self.mods = nn.ModuleList(mods)
        self.fn = fn

    def forward(self, x):
        return self.fn(x, *self.mods)


def conv(ci, co, k=3, s=1, p=1, g=1, bias=True):
    return nn.Conv2d(ci, co, k, stride=s, padding=p, groups=g, bias=bias)


def bn(c):
    m = nn.BatchNorm2d(c)
    with torch.no_grad():  # non-trivial statistics so folding errors show
        m.running_mean.uniform_(-0.5, 0.5)
        m.running_var.uniform_(0.5, 2.0)
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-0.5, 0.5)
    return m


def cases():
    """(name, module, input shape, opset, constant folding)"""
    img = (1, 4, 8, 8)
    return [
        ("conv_bn_relu", nn.Sequential(conv(4, 8), bn(8), nn.ReLU()), img, 13, False),
        ("conv_strided_dilated", Lambda(lambda x, c: c(x), nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2)), img, 13, True),
        ("conv_same_asym", nn.Conv2d(4, 6, (3, 5), padding=(1, 2)), img, 11, True),
        ("depthwise_relu6", nn.Sequential(conv(4, 4, g=4), bn(4), nn.ReLU6()), img, 13, False),
        ("grouped_conv", conv(4, 8, g=2), img, 13, True),
        ("batchnorm_alone", Lambda(lambda x, b: b(x + 1.0), bn(4)), img, 13, False),
        ("maxpool_ceil", nn.MaxPool2d(3, stride=2, ceil_mode=True), (1, 4, 8, 8), 13, True),
        ("avgpool_pad", nn.AvgPool2d(3, stride=1, padding=1), img, 13, True),
        ("unsupported_avgpool_nopadcount", nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), img, 13, True),
        ("global_pools", Lambda(lambda x: F.adaptive_avg_pool2d(x, 1) + F.adaptive_max_pool2d(x, 1)), img, 13, True),
        ("flatten_linear", Lambda(lambda x, l: l(torch.flatten(x, 1)), nn.Linear(4 * 8 * 8, 5)), img, 13, True),
        ("view_linear", Lambda(lambda x, l: l(x.view(x.size(0), -1)), nn.Linear(4 * 8 * 8, 5)), img, 11, True),
        ("flatten_then_relu", Lambda(lambda x: F.relu(torch.flatten(x, 1))), img, 13, True),
        ("concat_channels", Lambda(lambda x, a, b: torch.cat([a(x), b(x)], 1), conv(4, 3), conv(4, 5, k=1, p=0)), img, 13, True),
        ("leaky_relus", Lambda(lambda x: F.leaky_relu(x, 0.1) + F.leaky_relu(x * 2.0, 0.2)), img, 13, True),
        ("hardswish_opset13", nn.Hardswish(), img, 13, True),
        ("hardswish_opset14", nn.Hardswish(), img, 14, True),
        ("hardsigmoid", nn.Hardsigmoid(), img, 13, True),
        ("silu_se", Lambda(lambda x, c: x * torch.sigmoid(c(F.adaptive_avg_pool2d(x, 1))), conv(4, 4, k=1, p=0)), img, 13, True),
        ("softmax_channels", Lambda(lambda x: torch.softmax(x, dim=1)), img, 13, True),
        ("sub_div_const", Lambda(lambda x: (x - 0.5) / 2.0 - x * 3.0), img, 13, True),
        ("residual_sub", Lambda(lambda x, c: x - c(x), conv(4, 4)), img, 13, True),
        ("mean_spatial", Lambda(lambda x: x.mean(dim=(2, 3))), img, 13, True),
        ("tokens_layernorm", Lambda(lambda x, n: n(x.flatten(2).transpose(1, 2)), nn.LayerNorm(4)), img, 13, True),
        ("tokens_layernorm17", Lambda(lambda x, n: n(x.flatten(2).transpose(1, 2)), nn.LayerNorm(4)), img, 17, True),
        ("gelu_erf", Lambda(lambda x: F.gelu(x)), (1, 5, 6), 13, True),
        ("slice_channels", Lambda(lambda x: x[:, 1:3] + x[:, ::2][:, :2]), img, 13, True),
        ("chunk_split", Lambda(lambda x: torch.chunk(x, 2, dim=1)[1] * 2.0), img, 13, True),
        ("split_tokens", Lambda(lambda x: x.split([2, 3], dim=-1)[1]), (1, 6, 5), 13, True),
        ("gather_token", Lambda(lambda x, l: l(x[:, 0]), nn.Linear(5, 3)), (1, 6, 5), 13, True),
        ("mean_tokens", Lambda(lambda x: x.mean(dim=1)), (1, 6, 5), 13, True),
        ("attention_matmul", Lambda(lambda x: torch.softmax(x @ x.transpose(-2, -1) * 0.5, -1) @ x), (1, 2, 6, 4), 13, True),
        ("matmul_const", Lambda(lambda x, l: F.relu(l(x)), nn.Linear(5, 7)), (1, 6, 5), 13, True),
        ("unsqueeze_squeeze", Lambda(lambda x: torch.relu(x.unsqueeze(1)).squeeze(1) + x), (1, 6, 5), 13, True),
    ]


def export_all(out):
    torch.manual_seed(0)
    names = []
    for name, module, shape, opset, fold in cases():
        module.eval()
        x = torch.randn(*shape)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        mode = torch.onnx.TrainingMode.EVAL if fold else torch.onnx.TrainingMode.PRESERVE
        torch.onnx.export(module, x, os.path.join(d, "model.onnx"), opset_version=opset,
                          do_constant_folding=fold, training=mode, input_names=["input"],
                          output_names=["output"])
        with torch.no_grad():
            y = module(x)
        np.save(os.path.join(d, "input.npy"), x.numpy())
        np.save(os.path.join(d, "output.npy"), y.numpy())
        names.append(name)
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    return {"cases": names}
