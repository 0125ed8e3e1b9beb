#!/usr/bin/python3
"""Regenerates docs/perf.md's model-check tables: torchvision models (random weights) through
`dpushard import` and `dpushard predict` on the built-in targets, against the published
Vitis AI 2.5 Model Zoo figures for the ZCU102 and ZCU104 (model_zoo/README.md at tag v2.5 of
Xilinx/Vitis-AI: end-to-end fps, several threads and one thread). No KV260 figure besides the
calibration point is used or printed.

  scripts/model_zoo_check.py [--dpushard build/rel/tools/dpushard] [--work DIR] [--models a,b]
                             [--import-args "..."] [--json OUT.json]

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

# torchvision name -> input size.
MODELS = {
    "resnet18": 224, "resnet50": 224, "resnet101": 224, "resnet152": 224,
    "vgg16": 224, "vgg19": 224, "mobilenet_v2": 224, "mobilenet_v3_small": 224,
    "efficientnet_b0": 224, "googlenet": 224, "squeezenet1_1": 224, "inception_v3": 299,
}
# Imported a second time with --hard-sigmoid (sigmoid -> hard-sigmoid, SiLU -> hard-swish),
# the rewrite vai_q_tensorflow2 applied to the Model Zoo's tf2 models of these two.
HARD = ["efficientnet_b0", "mobilenet_v3_small"]

# Published end-to-end fps (Vitis AI 2.5 Model Zoo README, "Performance on ZCU102
# (0432055-05)", 3 x B4096 @ 281 MHz, and "Performance on ZCU104", 2 x B4096 @ 300 MHz):
# (zoo model, torchvision model it matches, board, one thread, several threads).
# The matches are the same architecture and input size; the tf/tf2 models differ in
# details (Slim ResNet v1 puts the stride on the first 1x1 conv; Keras' EfficientNet-B0 and
# MobileNetV3-small were quantized by vai_q_tensorflow2, which turns sigmoid into
# hard-sigmoid and swish into hard-swish).
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
    ("tf_mobilenetv2_1.0_imagenet_224_224_602M", "mobilenet_v2", "zcu102", 268.07, 707.03),
    ("tf_mobilenetv2_1.0_imagenet_224_224_602M", "mobilenet_v2", "zcu104", 284.18, 609.18),
    ("tf2_mobilenetv3_imagenet_224_224_132M", "mobilenet_v3_small+hard", "zcu102", 336.62, 965.76),
    ("tf2_mobilenetv3_imagenet_224_224_132M", "mobilenet_v3_small+hard", "zcu104", 363.63, 819.63),
    ("tf2_efficientnet-b0_imagenet_224_224_0.36G", "efficientnet_b0+hard", "zcu102", 78.02, 152.61),
    ("tf2_efficientnet-b0_imagenet_224_224_0.36G", "efficientnet_b0+hard", "zcu104", 83.77, 146.26),
    ("tf_inceptionv1_imagenet_224_224_3G", "googlenet", "zcu102", 191.26, 470.88),
    ("tf_inceptionv1_imagenet_224_224_3G", "googlenet", "zcu104", 202.49, 412.79),
    ("pt_squeezenet_imagenet_224_224_351.7M", "squeezenet1_1", "zcu102", 575.41, 1499.60),
    ("pt_squeezenet_imagenet_224_224_351.7M", "squeezenet1_1", "zcu104", 599.88, 1315.93),
    ("pt_inceptionv3_imagenet_299_299_5.7G", "inception_v3", "zcu102", 59.83, 136.02),
    ("pt_inceptionv3_imagenet_299_299_5.7G", "inception_v3", "zcu104", 63.53, 122.11),
]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("model_zoo_check: %s failed:\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return r.stdout


def prepare(name, size, work, dpushard, import_args, hard=False):
    folder = os.path.join(work, name)
    onnx = os.path.join(folder, "model.onnx")
    xmodel = os.path.join(folder, "hard_int.xmodel" if hard else name + "_int.xmodel")
    if hard:
        import_args = import_args + ["--hard-sigmoid"]
    if not os.path.exists(onnx):
        run(["/usr/bin/python3", os.path.join(ROOT, "tests", "onnx", "make_models.py"),
             "torchvision", name, folder, "--size", str(size)])
    if not os.path.exists(xmodel):
        run([dpushard, "import", onnx, "--calib-random", "2", "-o", xmodel] + import_args)
    return xmodel


def predict(dpushard, xmodel, target):
    return json.loads(run([dpushard, "predict", xmodel, "--target", target, "--json"]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dpushard", default=os.path.join(ROOT, "build", "rel", "tools", "dpushard"))
    p.add_argument("--work", default="/tmp/dpushard-model-zoo")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--import-args", default="", help="extra arguments for dpushard import")
    p.add_argument("--json", help="also write every prediction to this file")
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            sys.exit("model_zoo_check: unknown model '%s'" % n)

    preds = {}
    for n in names:
        xmodel = prepare(n, MODELS[n], args.work, args.dpushard, args.import_args.split())
        preds[n] = {t: predict(args.dpushard, xmodel, t) for t in ("kv260", "zcu102", "zcu104")}
        if n in HARD:
            hard = prepare(n, MODELS[n], args.work, args.dpushard, args.import_args.split(), True)
            preds[n + "+hard"] = {t: predict(args.dpushard, hard, t)
                                  for t in ("kv260", "zcu102", "zcu104")}
        print("predicted %s" % n, file=sys.stderr)

    print("| model | board | predicted fps (1 thread / several) | published fps (1 thread / "
          "several) | error (1 thread / several) |")
    print("|---|---|---|---|---|")
    errors = []
    for zoo, n, board, one, many in PUBLISHED:
        if n not in preds:
            continue
        pr = preds[n][board]
        p_one, p_many = pr["fps_one_thread"], pr["fps"]
        e_one, e_many = p_one / one - 1, p_many / many - 1
        errors += [abs(e_one), abs(e_many)]
        print("| %s (`%s`) | %s | %.1f / %.1f | %.1f / %.1f | %+.0f %% / %+.0f %% |" %
              (n, zoo, board, p_one, p_many, one, many, 100 * e_one, 100 * e_many))
    if errors:
        print("\nmedian |error| over %d figures: %.1f %%" %
              (len(errors), 100 * statistics.median(errors)))

    print("\n| torchvision model | KV260 fps, several threads | one thread | DPU ms | CPU ms | "
          "DPU subgraphs | CPU subgraphs | GMACs |")
    print("|---|---|---|---|---|---|---|---|")
    for n in [k for k in preds]:
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
