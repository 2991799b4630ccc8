#!/usr/bin/env python3
"""Lists what ONNX models use: opsets, graph inputs and outputs, and every op
(domain, op_type, count; subgraphs of If/Loop/Scan included), to check the
reference runtime's coverage of the real models.

Usage: python3 scripts/models/model_ops.py [MODEL.onnx ...]
  default: every model of the cache (${EPPROF_MODEL_CACHE:-~/.cache/epprof/models}/models/*.onnx)
Needs the Python onnx package (Debian: python3-onnx).
"""
import collections
import glob
import os
import sys

import onnx


def walk(graph, counts):
    for node in graph.node:
        counts[(node.domain or "ai.onnx", node.op_type)] += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                walk(attr.g, counts)
            for sub in attr.graphs:
                walk(sub, counts)


def value_info(v):
    t = v.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]
    return f"{v.name}: {onnx.TensorProto.DataType.Name(t.elem_type).lower()}{dims}"


def main(paths):
    if not paths:
        cache = os.environ.get("EPPROF_MODEL_CACHE") or os.path.expanduser("~/.cache/epprof/models")
        paths = sorted(glob.glob(os.path.join(cache, "models", "*.onnx")))
        if not paths:
            sys.exit(f"no models in {cache}/models: run scripts/fetch_models.sh")
    for path in paths:
        model = onnx.load(path)
        counts = collections.Counter()
        walk(model.graph, counts)
        inits = {i.name for i in model.graph.initializer}
        opsets = ", ".join(f"{i.domain or 'ai.onnx'} {i.version}" for i in model.opset_import)
        print(f"{os.path.basename(path)}  ({os.path.getsize(path)} bytes; opsets: {opsets})")
        print("  inputs: " + "; ".join(value_info(v) for v in model.graph.input if v.name not in inits))
        print("  outputs: " + "; ".join(value_info(v) for v in model.graph.output))
        print("  ops: " + " ".join(f"{op}{'' if d == 'ai.onnx' else '@' + d}x{n}" for (d, op), n in
                                   sorted(counts.items(), key=lambda kv: kv[0][1])))


if __name__ == "__main__":
    main(sys.argv[1:])
