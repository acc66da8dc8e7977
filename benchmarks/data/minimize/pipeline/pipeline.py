"""A small data pipeline: loads records, normalises, batches, and 'trains'."""

# ruff: noqa: ANN001, ANN201
# A user's program as its user wrote it (untyped): minimize's input, not the project's code.
import argparse
import json
import math
import os
import sys


def load_records(n):
    records = []
    for i in range(n):
        records.append({"id": i, "value": (i * 37) % 101, "label": i % 3})
    return records


def normalise(records):
    values = [r["value"] for r in records]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    std = math.sqrt(var)
    for r in records:
        r["z"] = (r["value"] - mean) / std
    return records


def batches(records, size):
    for start in range(0, len(records), size):
        yield records[start : start + size]


def summarise(batch):
    labels = {}
    for r in batch:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
    return labels


def scale(batch, use_log):
    out = []
    for r in batch:
        if use_log:
            out.append(math.log(r["value"]))
        else:
            out.append(r["z"] * 2.0)
    return out


def train(records, size, use_log):
    total = 0.0
    for step, batch in enumerate(batches(records, size), 1):
        stats = summarise(batch)
        xs = scale(batch, use_log)
        total += sum(xs) / len(xs)
        print(f"step {step} mean {total / step:.4f} labels {json.dumps(stats)}", flush=True)
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--log-scale", type=int, default=0)
    a = p.parse_args()
    verbose = os.environ.get("VERBOSE") == "1"
    records = normalise(load_records(a.n))
    if verbose:
        print("records", len(records), file=sys.stderr)
    total = train(records, a.batch, bool(a.log_scale))
    print("total", total)


if __name__ == "__main__":
    main()
