#!/usr/bin/python3
"""Regenerates docs/perf.md's model-check tables: models (random weights) through
`dpushard import` and `dpushard predict` on the built-in targets, against the published
Vitis AI 2.5 Model Zoo figures for the ZCU102 and ZCU104 (model_zoo/README.md at tag v2.5 of
Xilinx/Vitis-AI: end-to-end fps, several threads and one thread). No KV260 figure besides the
calibration point is used or printed.

  scripts/model_zoo_check.py [--dpushard build/release/tools/dpushard] [--work DIR]
                             [--models a,b] [--import-args "..."] [--json OUT.json]
                             [--baseline BEFORE.json]

--baseline reads the --json of an earlier run (another dpushard build, same --work) and
prints its errors beside this run's ("before / after"), with the medians of both.
scripts/model_zoo_before.json is issue 24's "before" (the model at eb4e08f; how it was made:
docs/perf.md "Checks against the ZCU102 and ZCU104"): --baseline scripts/model_zoo_before.json.

Needs /usr/bin/python3 with torch, torchvision and onnx (Debian packages). Exports and
imports are cached in --work (default /tmp/dpushard-model-zoo), so a second run only
predicts. A big model takes minutes to import on two cores; this is a benchmark script,
not a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (input size, class). Classes: "plain" (plain convolutions) and "dwse" (depthwise
# separable convolutions and/or squeeze-excitation), the class issue 24 is about.
MODELS = {
    "resnet18": (224, "plain"), "resnet50": (224, "plain"), "resnet101": (224, "plain"),
    "resnet152": (224, "plain"), "vgg16": (224, "plain"), "vgg19": (224, "plain"),
    "googlenet": (224, "plain"), "squeezenet1_1": (224, "plain"),
    "inception_v3": (299, "plain"),
    "mobilenet_v2": (224, "dwse"), "mobilenet_v2_1.4": (224, "dwse"),
    "mobilenet_v1_1.0": (224, "dwse"), "mobilenet_v1_0.5": (160, "dwse"),
    "mobilenet_v1_0.25": (128, "dwse"), "mobilenet_v3_small": (224, "dwse"),
    "efficientnet_b0": (224, "dwse"),
}
# Imported a second time with --keep-sigmoid (sigmoid and SiLU left as they are, on the CPU:
# vai_q_pytorch's default) for the KV260 table; the default import turns sigmoid into
# hard-sigmoid and SiLU into hard-swish, as vai_q_tensorflow2 did for the Model Zoo's tf2
# EfficientNet-B0. (torchvision's MobileNetV3 has hard-sigmoid and hard-swish already.)
SIGMOID = ["efficientnet_b0"]

# Published end-to-end fps (Vitis AI 2.5 Model Zoo README, "Performance on ZCU102
# (0432055-05)", 3 x B4096 @ 281 MHz, and "Performance on ZCU104", 2 x B4096 @ 300 MHz):
# (zoo model, model it matches, board, one thread, several threads).
# The matches are the same architecture and input size; the tf/tf2 models differ in
# details (Slim ResNet v1 puts the stride on the first 1x1 conv; Slim MobileNetV1 ends in a
# 1x1 conv to 1001 classes; Keras' EfficientNet-B0 and MobileNetV3-small were quantized by
# vai_q_tensorflow2, which turns sigmoid into hard-sigmoid and swish into hard-swish, as
# `dpushard import` does by default).
PUBLISHED = [
    ("pt_resnet50_imagenet_224_224_4.1G_2.0", "resnet50", "zcu102", 77.58, 173.16),
    ("pt_resnet50_imagenet_224_224_4.1G_2.0", "resnet50", "zcu104", 83.56, 157.2),
    ("pt_vehicle-type-classification (ResNet-18)", "resnet18", "zcu102", 205.03, 499.64),
    ("pt_vehicle-type-classification (ResNet-18)", "resnet18", "zcu104", 218.02, 437.32),
    ("tf_resnetv1_101_imagenet_224_224_14.4G", "resnet101", "zcu102", 46.38, 110.72),
    ("tf_resnetv1_101_imagenet_224_224_14.4G", "resnet101", "zcu104", 49.54, 94.71),
    ("tf_resnetv1_152_imagenet_224_224_21.83G", "resnet152", "zcu102", 31.64, 77.23),
    ("tf_resnetv1_152_imagenet_224_224_21.83G", "resnet152", "zcu104", 33.81, 64.91),
    ("tf_vgg16_imagenet_224_224_30.96G", "vgg16", "zcu102", 20.15, 40.94),
    ("tf_vgg16_imagenet_224_224_30.96G", "vgg16", "zcu104", 21.49, 37.10),
    ("tf_vgg19_imagenet_224_224_39.28G", "vgg19", "zcu102", 17.37, 36.47),
    ("tf_vgg19_imagenet_224_224_39.28G", "vgg19", "zcu104", 18.54, 32.69),
    ("tf_inceptionv1_imagenet_224_224_3G", "googlenet", "zcu102", 191.26, 470.88),
    ("tf_inceptionv1_imagenet_224_224_3G", "googlenet", "zcu104", 202.49, 412.79),
    ("pt_squeezenet_imagenet_224_224_351.7M", "squeezenet1_1", "zcu102", 575.41, 1499.60),
    ("pt_squeezenet_imagenet_224_224_351.7M", "squeezenet1_1", "zcu104", 599.88, 1315.93),
    ("pt_inceptionv3_imagenet_299_299_5.7G", "inception_v3", "zcu102", 59.83, 136.02),
    ("pt_inceptionv3_imagenet_299_299_5.7G", "inception_v3", "zcu104", 63.53, 122.11),
    ("tf_mobilenetv2_1.0_imagenet_224_224_602M", "mobilenet_v2", "zcu102", 268.07, 707.03),
    ("tf_mobilenetv2_1.0_imagenet_224_224_602M", "mobilenet_v2", "zcu104", 284.18, 609.18),
    ("tf_mobilenetv2_1.4_imagenet_224_224_1.16G", "mobilenet_v2_1.4", "zcu102", 191.08, 473.15),
    ("tf_mobilenetv2_1.4_imagenet_224_224_1.16G", "mobilenet_v2_1.4", "zcu104", 203.20, 413.59),
    ("tf_mobilenetv1_1.0_imagenet_224_224_1.14G", "mobilenet_v1_1.0", "zcu102", 326.62, 951.00),
    ("tf_mobilenetv1_1.0_imagenet_224_224_1.14G", "mobilenet_v1_1.0", "zcu104", 344.85, 783.96),
    ("tf_mobilenetv1_0.5_imagenet_160_160_150M", "mobilenet_v1_0.5", "zcu102", 914.84, 3116.80),
    ("tf_mobilenetv1_0.5_imagenet_160_160_150M", "mobilenet_v1_0.5", "zcu104", 950.02, 2614.83),
    ("tf_mobilenetv1_0.25_imagenet_128_128_27M", "mobilenet_v1_0.25", "zcu102", 1332.90, 4754.20),
    ("tf_mobilenetv1_0.25_imagenet_128_128_27M", "mobilenet_v1_0.25", "zcu104", 1375.03, 4263.73),
    ("tf2_mobilenetv3_imagenet_224_224_132M", "mobilenet_v3_small", "zcu102", 336.62, 965.76),
    ("tf2_mobilenetv3_imagenet_224_224_132M", "mobilenet_v3_small", "zcu104", 363.63, 819.63),
    ("tf2_efficientnet-b0_imagenet_224_224_0.36G", "efficientnet_b0", "zcu102", 78.02, 152.61),
    ("tf2_efficientnet-b0_imagenet_224_224_0.36G", "efficientnet_b0", "zcu104", 83.77, 146.26),
]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("model_zoo_check: %s failed:\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return r.stdout


def export_own(name, size, onnx):
    """Models torchvision lacks, or has with another width: random weights, exported here."""
    import torch
    import torchvision
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if name.startswith("mobilenet_v2_"):
        model = torchvision.models.mobilenet_v2(weights=None, width_mult=float(name[13:]))
    else:  # mobilenet_v1_<alpha>: Slim's MobileNetV1 (conv, 13 depthwise-separable blocks)
        alpha = float(name[13:])

        def block(cin, cout, stride, depthwise):
            return [nn.Conv2d(cin, cout, 3 if depthwise else 1, stride, 1 if depthwise else 0,
                              groups=cin if depthwise else 1, bias=False),
                    nn.BatchNorm2d(cout), nn.ReLU6()]

        width = lambda c: max(8, int(c * alpha))
        layers = [nn.Conv2d(3, width(32), 3, 2, 1, bias=False), nn.BatchNorm2d(width(32)),
                  nn.ReLU6()]
        cin = width(32)
        for c, s in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                     (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]:
            layers += block(cin, cin, s, True) + block(cin, width(c), 1, False)
            cin = width(c)
        layers += [nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, 1001, 1), nn.Flatten()]
        model = nn.Sequential(*layers)
    model.eval()
    os.makedirs(os.path.dirname(onnx), exist_ok=True)
    tmp = onnx + ".tmp"
    torch.onnx.export(model, torch.randn(1, 3, size, size), tmp, opset_version=13,
                      input_names=["input"], output_names=["output"])
    os.replace(tmp, onnx)


def prepare(name, size, work, dpushard, import_args, keep_sigmoid=False):
    folder = os.path.join(work, name)
    onnx = os.path.join(folder, "model.onnx")
    xmodel = os.path.join(folder, "sigmoid_int.xmodel" if keep_sigmoid else name + "_int.xmodel")
    if keep_sigmoid:
        import_args = import_args + ["--keep-sigmoid"]
    if not os.path.exists(onnx):
        if name.startswith("mobilenet_v1_") or name.startswith("mobilenet_v2_"):
            export_own(name, size, onnx)
        else:
            run(["/usr/bin/python3", os.path.join(ROOT, "tests", "onnx", "make_models.py"),
                 "torchvision", name, folder, "--size", str(size)])
    if not os.path.exists(xmodel):
        run([dpushard, "import", onnx, "--calib-random", "2", "-o", xmodel] + import_args)
    return xmodel


def predict(dpushard, xmodel, target):
    return json.loads(run([dpushard, "predict", xmodel, "--target", target, "--json"]))


def errors_of(preds, names):
    """(zoo, name, board, published one, several, predicted one, several) per published row."""
    rows = []
    for zoo, n, board, one, many in PUBLISHED:
        if n in names and n in preds:
            pr = preds[n][board]
            rows.append((zoo, n, board, one, many, pr["fps_one_thread"], pr["fps"]))
    return rows


def medians(rows):
    out = {}
    for cls in ("dwse", "plain"):
        e = [abs(p / pub - 1) for _, n, _, o, m, po, pm in rows if MODELS[n][1] == cls
             for p, pub in ((po, o), (pm, m))]
        out[cls] = (len(e), statistics.median(e) if e else float("nan"))
    e = [abs(p / pub - 1) for _, _, _, o, m, po, pm in rows for p, pub in ((po, o), (pm, m))]
    out["all"] = (len(e), statistics.median(e) if e else float("nan"))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dpushard", default=os.path.join(ROOT, "build", "release", "tools",
                                                      "dpushard"))
    p.add_argument("--work", default="/tmp/dpushard-model-zoo")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--import-args", default="", help="extra arguments for dpushard import")
    p.add_argument("--json", help="also write every prediction to this file")
    p.add_argument("--baseline", help="the --json of an earlier run: print its errors too")
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            sys.exit("model_zoo_check: unknown model '%s'" % n)
    base = None
    if args.baseline:
        with open(args.baseline) as f:
            base = json.load(f)

    preds = {}
    for n in names:
        size = MODELS[n][0]
        xmodel = prepare(n, size, args.work, args.dpushard, args.import_args.split())
        preds[n] = {t: predict(args.dpushard, xmodel, t) for t in ("kv260", "zcu102", "zcu104")}
        if n in SIGMOID:
            xs = prepare(n, size, args.work, args.dpushard, args.import_args.split(), True)
            preds[n + "+sigmoid"] = {t: predict(args.dpushard, xs, t)
                                     for t in ("kv260", "zcu102", "zcu104")}
        print("predicted %s" % n, file=sys.stderr)

    rows = errors_of(preds, names)
    before = {(n, b): (po, pm) for _, n, b, _, _, po, pm in errors_of(base, names)} if base else {}
    if base:
        print("| model | class | board | published fps (1 thread / several) | predicted before "
              "| predicted after | error before (1 / several) | error after (1 / several) |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| model | class | board | predicted fps (1 thread / several) | published fps "
              "(1 thread / several) | error (1 thread / several) |")
        print("|---|---|---|---|---|---|")
    for zoo, n, board, one, many, p_one, p_many in rows:
        e = "%+.0f %% / %+.0f %%" % (100 * (p_one / one - 1), 100 * (p_many / many - 1))
        if base:
            b_one, b_many = before[(n, board)]
            eb = "%+.0f %% / %+.0f %%" % (100 * (b_one / one - 1), 100 * (b_many / many - 1))
            print("| %s (`%s`) | %s | %s | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %s | %s |" %
                  (n, zoo, MODELS[n][1], board, one, many, b_one, b_many, p_one, p_many, eb, e))
        else:
            print("| %s (`%s`) | %s | %s | %.1f / %.1f | %.1f / %.1f | %s |" %
                  (n, zoo, MODELS[n][1], board, p_one, p_many, one, many, e))
    after = medians(rows)
    old = medians(errors_of(base, names)) if base else None
    print()
    for cls, label in (("dwse", "depthwise/SE class"), ("plain", "plain convolutions"),
                       ("all", "all")):
        count, med = after[cls]
        line = "median |error|, %s, over %d figures: %.1f %%" % (label, count, 100 * med)
        if old:
            line += " (before: %.1f %%)" % (100 * old[cls][1])
        print(line)

    print("\n| model | KV260 fps, several threads | one thread | DPU ms | CPU ms | "
          "DPU subgraphs | CPU subgraphs | GMACs |")
    print("|---|---|---|---|---|---|---|---|")
    for n in preds:
        pr = preds[n]["kv260"]
        print("| %s | %.1f | %.1f | %.2f | %.2f | %d | %d | %.2f |" %
              (n, pr["fps"], pr["fps_one_thread"], pr["dpu_ms"], pr["cpu_ms"],
               pr["dpu_subgraphs"], pr["cpu_subgraphs"], pr["macs"] / 1e9))
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({n: {t: {k: v for k, v in pr.items() if k not in ("ops", "cpu_ops")}
                           for t, pr in preds[n].items()} for n in preds}, f, indent=1)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
