#!/usr/bin/env python3
"""Streams a generation from arach-server over gRPC and prints the text as it arrives.

    client/python/generate_stubs.sh                      # once: writes client/python/generated
    PYTHONPATH=client/python/generated python3 client/python/stream_generate.py \
        --server 127.0.0.1:50051 --prompt "Once upon a time" --variant arach --max-tokens 32

The last line (on stderr) says the variant that served the request, the token counts, the finish reason
and the time to first token.
"""
import argparse
import sys

import grpc

from arach.v1 import inference_pb2, inference_pb2_grpc


def build_request(args):
    request = inference_pb2.GenerateRequest(text=args.prompt, max_tokens=args.max_tokens, request_id=args.request_id)
    request.sampling.temperature = args.temperature
    if args.seed is not None:
        request.sampling.seed = args.seed
    if args.variant:  # unset: the server's default or its A/B experiment decides
        request.variant.arach = "arach" in args.variant
        request.variant.skip = "skip" in args.variant
    return request


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--variant", choices=["base", "arach", "skip", "arach+skip"])
    parser.add_argument("--request-id", default="")
    parser.add_argument("--timeout", type=float, default=60.0, help="deadline in seconds")
    args = parser.parse_args()

    with grpc.insecure_channel(args.server) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)
        try:
            for response in stub.Generate(build_request(args), timeout=args.timeout):
                sys.stdout.write(response.text)
                sys.stdout.flush()
                if response.HasField("finish"):
                    finish = response.finish
        except grpc.RpcError as error:
            print(f"\n{error.code().name}: {error.details()}", file=sys.stderr)
            return 1
    print()
    reason = inference_pb2.FinishReason.Name(finish.reason)
    print(f"variant={finish.variant.name} prompt_tokens={finish.usage.prompt_tokens} "
          f"completion_tokens={finish.usage.completion_tokens} finish={reason} "
          f"ttft_ms={1e3 * finish.timings.time_to_first_token_seconds:.1f} request_id={finish.request_id}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
