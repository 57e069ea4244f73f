#!/usr/bin/env python3
"""The zoo's table: for each model of models/zoo and each of its exports, the nodes, parameters,
fp32 compile time, the median fp32 step time on the CPU backend and the largest relative loss
deviation from PyTorch's fp32 curve over 20 SGD and 20 AdamW steps, per precision. It runs
tests/e2e/zoo.py (the CI test's own checks and measurements) once a model, one at a time; a
model that fails is listed with its failure.

    python3 tools/bench/zoo_table.py --bin build/bin [--zoo models/zoo] [MODEL ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--zoo", default=os.path.join(ROOT, "models", "zoo"))
    args = parser.parse_args()
    models = args.models or sorted(
        d for d in os.listdir(args.zoo) if os.path.exists(os.path.join(args.zoo, d, "meta.json")))
    print("| model | exporter | nodes | parameters | compile (s) | fp32 step (ms) "
          "| max rel. dev. fp32 | amp | bf16 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    failed = 0
    for model in models:
        with open(os.path.join(args.zoo, model, "meta.json")) as f:
            meta = json.load(f)
        with tempfile.NamedTemporaryFile(suffix=".json") as row:
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", "zoo.py"), model,
                                "--bin", args.bin, "--zoo", args.zoo, "--row", row.name,
                                "--no-emu"], capture_output=True, text=True)
            rows = json.load(open(row.name)) if p.returncode == 0 else []
        for r in rows:
            if "refused" in r:
                why = r["refused"].split(": error: ", 1)[-1].split(": ", 1)[-1]
                print(f"| {model} | {r['exporter']} | {r['nodes']} | {r['parameters']:,} | "
                      f"a800c refuses: {why[:170]} | | | | |")
                continue
            d = r["deviation"]
            print(f"| {model} | {r['exporter']} | {r['nodes']} | {r['parameters']:,} | "
                  f"{r['compile_s']:.2f} | {r['step_ms']:.2f} | {d['fp32']:.1e} | {d['amp']:.1e} "
                  f"| {d['bf16']:.1e} |")
        if p.returncode != 0:
            failed += 1
            why = (p.stdout + p.stderr).strip().splitlines()
            reason = next((line for line in why if "error:" in line), why[-1] if why else "?")
            print(f"| {model} | (fails) | | {meta['parameters']:,} | | | {reason[:160]} | | |")
        for exporter, export in sorted(meta["exporters"].items()):
            if "error" in export:
                print(f"| {model} | {exporter}: not exported | | | | | {export['error'][:120]} "
                      "| | |")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
