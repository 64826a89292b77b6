#!/usr/bin/env python3
"""Peers for the GPU benchmark: Hugging Face transformers on the same model shapes as our make-model presets.

Two peers, both bf16 on one GPU, random weights of the real architectures (no download):
  hf-eager     model.generate() as shipped (dynamic cache, eager attention kernels)
  torch-static a static KV cache, SDPA attention and torch.compile(mode="reduce-overhead") (CUDA graphs)
               on the forward: transformers' documented fast path.

For each model and batch size it prints prefill tokens/s and decode tokens/s and ms/step for
`--prompt` prompt tokens and `--new` generated tokens (greedy, no early stop), in the same columns as
bench/forward_bench so that one script (scripts/gpu-check.sh) can print both side by side.

  python3 bench/torch_peer_bench.py --models gpt2-124m,pythia-410m --batches 1,32,256 --peers hf-eager,torch-static
"""
import argparse
import time

import torch
import transformers


def make_config(name):
    if name == "gpt2-124m":
        return transformers.GPT2Config(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257)
    if name == "pythia-410m":
        return transformers.GPTNeoXConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                          intermediate_size=4096, vocab_size=50304, rotary_pct=0.25,
                                          max_position_embeddings=2048, use_parallel_residual=True)
    raise SystemExit(f"unknown model {name}")


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - start


def measure(model, batch, prompt, new, peer):
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device="cuda")
    kwargs = dict(do_sample=False, min_new_tokens=new, max_new_tokens=new, pad_token_id=0)
    if peer == "torch-static":
        kwargs["cache_implementation"] = "static"
    # Warm-up (and, for torch-static, compilation and graph capture).
    model.generate(ids, **kwargs)
    model.generate(ids, **kwargs)
    with torch.no_grad():
        _, prefill_s = timed(lambda: model(ids))
    _, total_s = timed(lambda: model.generate(ids, **kwargs))
    decode_s = max(total_s - prefill_s, 1e-9)
    return batch * prompt / prefill_s, 1e3 * decode_s / (new - 1), batch * (new - 1) / decode_s


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="gpt2-124m,pythia-410m")
    parser.add_argument("--batches", default="1,32,256")
    parser.add_argument("--peers", default="hf-eager,torch-static")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"# torch_peer_bench: torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{torch.cuda.get_device_name()}; prompt {args.prompt}, {args.new} new tokens, bf16")
    print(f"{'peer':<14} {'model':<14} {'batch':>6} {'prefill tok/s':>16} {'decode ms/step':>16} {'decode tok/s':>16}")
    for name in args.models.split(","):
        for peer in args.peers.split(","):
            attention = "sdpa" if peer == "torch-static" else "eager"
            model = transformers.AutoModelForCausalLM.from_config(make_config(name), attn_implementation=attention,
                                                                  torch_dtype=torch.bfloat16).cuda().eval()
            if peer == "torch-static":
                model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
            for batch in [int(b) for b in args.batches.split(",")]:
                try:
                    prefill, ms, tps = measure(model, batch, args.prompt, args.new, peer)
                    print(f"{peer:<14} {name:<14} {batch:>6} {prefill:>16.0f} {ms:>16.3f} {tps:>16.1f}", flush=True)
                except Exception as error:  # report and go on: one failed shape must not hide the others
                    print(f"{peer:<14} {name:<14} {batch:>6} failed: {type(error).__name__}: {error}", flush=True)
            del model
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
