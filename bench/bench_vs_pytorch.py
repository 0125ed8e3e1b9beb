#!/usr/bin/python3
"""dpushard's cpu backend against PyTorch int8 on torchvision ResNets (docs/cpu_backend.md).

For each model (random weights, seed 0, 224x224): export to ONNX with
tests/onnx/make_models.py, import with `dpushard import --calib-random`, and time
`dpushard exec --backend cpu --threads T --repeat N --json` (median latency per frame). In the
same run, PyTorch's FX post-training static quantization (quantize_fx, engine 'onednn' when
available, else 'x86' or 'fbgemm') of the same model, timed with torch.set_num_threads(T).
Rounds alternate between the two so both see the same machine load; the best round median of
each is reported.

    /usr/bin/python3 bench/bench_vs_pytorch.py build/cpu/tools/dpushard [--threads 1 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torchvision
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODELS = os.path.join(HERE, "..", "tests", "onnx", "make_models.py")


def pick_engine():
    engines = torch.backends.quantized.supported_engines
    for engine in ("onednn", "x86", "fbgemm"):
        if engine in engines:
            return engine
    sys.exit(f"bench_vs_pytorch: no x86 quantized engine in torch ({engines})")


def dpushard_model(dpushard, name, size, work):
    """The imported `_int` xmodel of torchvision `name` (made once per work folder)."""
    folder = os.path.join(work, f"{name}_{size}")
    xmodel = os.path.join(folder, "model.xmodel")
    if not os.path.exists(xmodel):
        subprocess.run(["/usr/bin/python3", MAKE_MODELS, "torchvision", name, folder,
                        "--size", str(size)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([dpushard, "import", os.path.join(folder, "model.onnx"),
                        "--calib-random", "2", "--seed", "3", "-o", xmodel, "--json"],
                       check=True, stdout=subprocess.DEVNULL)
    return xmodel


def time_dpushard(dpushard, xmodel, threads, repeat):
    out = subprocess.run([dpushard, "exec", xmodel, "--backend", "cpu", "--threads",
                          str(threads), "--repeat", str(repeat), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def torch_int8_model(name, size, engine):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    torch.backends.quantized.engine = engine
    example = torch.randn(1, 3, size, size)
    prepared = prepare_fx(model, get_default_qconfig_mapping(engine), example_inputs=(example,))
    with torch.inference_mode():
        for _ in range(2):  # random calibration, as for dpushard
            prepared(torch.randn(1, 3, size, size))
    return convert_fx(prepared), example


def time_torch(model, example, threads, repeat):
    torch.set_num_threads(threads)
    times = []
    with torch.inference_mode():
        model(example)  # warm-up
        for _ in range(repeat):
            start = time.perf_counter()
            model(example)
            times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dpushard", help="path to the dpushard binary (built with the cpu backend)")
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=10, help="frames per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per setting")
    parser.add_argument("--work", default=os.path.join("build", "bench_vs_pytorch"),
                        help="folder for the exported and imported models (reused)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()
    if not os.access(args.dpushard, os.X_OK):
        sys.exit(f"bench_vs_pytorch: '{args.dpushard}' is not an executable")
    engine = pick_engine()
    os.makedirs(args.work, exist_ok=True)

    rows = []
    for name in args.models:
        xmodel = dpushard_model(args.dpushard, name, args.size, args.work)
        qmodel, example = torch_int8_model(name, args.size, engine)
        for threads in args.threads:
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(time_dpushard(args.dpushard, xmodel, threads, args.repeat))
                theirs.append(time_torch(qmodel, example, threads, args.repeat))
            rows.append({"model": name, "size": args.size, "threads": threads,
                         "dpushard_ms": min(ours), "torch_ms": min(theirs),
                         "ratio": min(ours) / min(theirs), "torch_engine": engine,
                         "dpushard_rounds_ms": ours, "torch_rounds_ms": theirs})

    print(f"torch {torch.__version__}, quantized engine '{engine}', {args.size}x{args.size}, "
          f"{args.repeat} frames x {args.rounds} rounds, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    print(f"{'model':<10} {'threads':>7} {'dpushard ms':>12} {'torch ms':>10} {'ratio':>7}")
    for r in rows:
        print(f"{r['model']:<10} {r['threads']:>7} {r['dpushard_ms']:>12.2f} {r['torch_ms']:>10.2f} "
              f"{r['ratio']:>7.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
