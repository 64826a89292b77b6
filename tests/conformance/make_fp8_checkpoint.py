#!/usr/bin/env python3
"""Writes an FP8 (e4m3) copy of a float checkpoint folder, and the float32 checkpoint of the same dequantized
weights, for the FP8 loading tests (tests/conformance/fp8_checkpoint_test.cc).

    make_fp8_checkpoint.py SRC FP8_DIR DEQUANT_DIR --layout hf-fp8 --block 128,128
    make_fp8_checkpoint.py SRC FP8_DIR DEQUANT_DIR --layout compressed-tensors --strategy channel

Independent of the engine: numpy only, its own safetensors reader/writer and its own e4m3 rounding (nearest,
ties to the even code, saturating at 448), so that the test checks the engine's reading of the published
layouts rather than a shared helper:
  - hf-fp8: Hugging Face fine-grained FP8 (Qwen3-*-FP8). quantization_config {"quant_method": "fp8",
    "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [R, C]}; each quantized
    `<name>` is F8_E4M3 and `<name>_scale_inv` float32 [ceil(rows/R), ceil(cols/C)] = block amax / 448, and
    the weight is fp8 * scale_inv.
  - compressed-tensors: llm-compressor's "float-quantized" format, strategy tensor ([1]), channel
    ([rows, 1]), group (--group G: [rows, cols/G]) or block (--block R,C); `<name>_scale` float32 plus an
    `<name>_input_scale`-free dynamic activation scheme; `ignore: ["lm_head"]`.
Quantized: every 2-D weight of the transformer blocks (attention and MLP projections); embeddings, the LM
head, norms and biases keep their stored dtype. The dequantized copy holds every tensor as float32 with
the quantized ones replaced by fp8 * scale computed in float32, and the source config.json unchanged.
The source's sharding (model.safetensors.index.json) is kept, with the scales listed in the index.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

FP8_MAX = 448.0


def e4m3_values():
    """Float value of each code 0..126 (non-negative, finite), ascending."""
    values = []
    for code in range(127):
        exponent, mantissa = code >> 3, code & 7
        if exponent == 0:
            values.append(mantissa / 8.0 * 2.0 ** -6)
        else:
            values.append((1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7))
    return np.array(values, dtype=np.float64)


VALUES = e4m3_values()


def to_e4m3(x):
    """float array -> uint8 e4m3 codes (round to nearest, ties to even code; saturating)."""
    x = np.asarray(x, dtype=np.float64)
    sign = (np.signbit(x)).astype(np.uint8) << 7
    mag = np.minimum(np.abs(x), FP8_MAX)
    upper = np.clip(np.searchsorted(VALUES, mag, side="left"), 0, 126)
    lower = np.clip(upper - 1, 0, 126)
    d_up = np.abs(VALUES[upper] - mag)
    d_low = np.abs(mag - VALUES[lower])
    pick_lower = (d_low < d_up) | ((d_low == d_up) & (lower % 2 == 0))
    code = np.where(pick_lower, lower, upper).astype(np.uint8)
    code = np.where(code == 0, 0, code | sign).astype(np.uint8)  # -0 written as +0
    return code


def from_e4m3(codes):
    codes = np.asarray(codes, dtype=np.uint8)
    mag = VALUES[codes & 0x7F].astype(np.float32)
    return np.where(codes & 0x80, -mag, mag).astype(np.float32)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin:base + end]
        dtype = info["dtype"]
        if dtype == "F32":
            arr = np.frombuffer(raw, dtype="<f4").copy()
        elif dtype == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dtype == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: {name}: dtype {dtype} not handled")
        tensors[name] = (dtype, arr.reshape(info["shape"]), raw)
    return tensors


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype string, shape, raw bytes)."""
    header, offset = {}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def should_quantize(name, arr):
    if arr.ndim != 2 or not name.endswith(".weight"):
        return False
    return not any(part in name for part in ("embed", "wte", "wpe", "lm_head", "embed_out"))


def grid_of(rows, cols, args):
    """Block [R, C] of one scale."""
    if args.layout == "hf-fp8" or args.strategy == "block":
        r, c = (int(v) for v in args.block.split(","))
        return r, c
    if args.strategy == "tensor":
        return rows, cols
    if args.strategy == "channel":
        return 1, cols
    return 1, args.group  # group


def quantize(arr, args):
    """-> (codes [rows, cols] uint8, scales [grid_rows, grid_cols] float32, dequantized float32)."""
    rows, cols = arr.shape
    br, bc = grid_of(rows, cols, args)
    gr, gc = -(-rows // br), -(-cols // bc)
    scales = np.zeros((gr, gc), dtype=np.float32)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    for i in range(gr):
        for j in range(gc):
            block = arr[i * br:(i + 1) * br, j * bc:(j + 1) * bc].astype(np.float32)
            amax = float(np.max(np.abs(block)))
            scale = np.float32(amax / FP8_MAX if amax > 0 else 1.0)
            scales[i, j] = scale
            codes[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = to_e4m3(block / scale)
    expanded = np.repeat(np.repeat(scales, br, axis=0), bc, axis=1)[:rows, :cols]
    dequant = (from_e4m3(codes) * expanded).astype(np.float32)
    return codes, scales, dequant


def scale_shape(scales, args):
    if args.layout == "compressed-tensors" and args.strategy == "tensor":
        return [1]
    return list(scales.shape)


def quantization_config(args):
    if args.layout == "hf-fp8":
        return {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                "weight_block_size": [int(v) for v in args.block.split(",")]}
    weights = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": args.strategy, "dynamic": False,
               "group_size": args.group if args.strategy == "group" else None,
               "block_structure": [int(v) for v in args.block.split(",")] if args.strategy == "block" else None}
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
            "ignore": ["lm_head"], "kv_cache_scheme": None,
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights,
                                          "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                                "dynamic": True, "symmetric": True}}}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("src")
    parser.add_argument("fp8_dir")
    parser.add_argument("dequant_dir")
    parser.add_argument("--layout", choices=["hf-fp8", "compressed-tensors"], required=True)
    parser.add_argument("--strategy", choices=["tensor", "channel", "group", "block"], default="channel")
    parser.add_argument("--block", default="128,128")
    parser.add_argument("--group", type=int, default=32)
    args = parser.parse_args()
    suffix = "_scale_inv" if args.layout == "hf-fp8" else "_scale"

    for out in (args.fp8_dir, args.dequant_dir):
        os.makedirs(out, exist_ok=True)
    files = sorted(f for f in os.listdir(args.src) if f.endswith(".safetensors") and (f.startswith("model")))
    index_path = os.path.join(args.src, "model.safetensors.index.json")
    fp8_map, dequant_map = {}, {}
    quantized = 0
    for file in files:
        fp8_tensors, dequant_tensors = [], []
        for name, (dtype, arr, raw) in sorted(read_safetensors(os.path.join(args.src, file)).items()):
            if should_quantize(name, arr):
                codes, scales, dequant = quantize(arr, args)
                fp8_tensors.append((name, "F8_E4M3", arr.shape, codes.tobytes()))
                fp8_tensors.append((name + suffix, "F32", scale_shape(scales, args), scales.astype("<f4").tobytes()))
                dequant_tensors.append((name, "F32", arr.shape, dequant.astype("<f4").tobytes()))
                fp8_map[name + suffix] = file
                quantized += 1
            else:
                fp8_tensors.append((name, dtype, arr.shape, raw))
                dequant_tensors.append((name, "F32", arr.shape, arr.astype("<f4").tobytes()))
            fp8_map[name] = file
            dequant_map[name] = file
        write_safetensors(os.path.join(args.fp8_dir, file), fp8_tensors)
        write_safetensors(os.path.join(args.dequant_dir, file), dequant_tensors)
    if os.path.exists(index_path):
        for out, weight_map in ((args.fp8_dir, fp8_map), (args.dequant_dir, dequant_map)):
            with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)

    for file in os.listdir(args.src):
        path = os.path.join(args.src, file)
        if file.endswith(".safetensors") or file == "model.safetensors.index.json" or not os.path.isfile(path):
            continue
        for out in (args.fp8_dir, args.dequant_dir):
            shutil.copyfile(path, os.path.join(out, file))
    with open(os.path.join(args.src, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = quantization_config(args)
    with open(os.path.join(args.fp8_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"quantized {quantized} weights ({args.layout}) into {args.fp8_dir}")


if __name__ == "__main__":
    main()
