#!/usr/bin/env bash
# Every GPU check and benchmark of the CUDA backend, for a session that is lent a GPU machine.
#
# Here (the build machine):  bash scripts/gpu-check.sh pack
#   builds with CUDA for sm_90a and packs two bundles (see ../shared/tools/device-bundle), each under the 64 MiB a
#   device call carries: .gpu/bundle.tar.xz (the GPU tests, benches and arach-run with the fixtures they need) and
#   .gpu-serve/serve.tar.xz (arach-server, arach-cli and arach-run, their libraries, and the PyTorch peers).
# There (the GPU machine, repository root):  bash scripts/gpu-check.sh run [tests|bench|serve|peers|all]
#   with .gpu carried:
#   tests: the `gpu` tests (ops vs CPU, paged attention vs float32, fixture refs, sampling on the device vs the
#          CPU sampler, CUDA-graph decode steps vs steps run op by op), the failed cases again under
#          compute-sanitizer's memcheck, and a generation;
#   bench: our forward on GPT-2-124M and Pythia-410M shapes, batch 1/32/256, prompt 128, 128 new tokens, the
#          variant costs, and the serving engine (continuous batching, no gRPC) at concurrency 1/64/256, scoring and
#          embeddings (last-token and mean pooling);
#   with .gpu-serve carried:
#   serve: arach-cli bench through arach-server --device cuda (gRPC) on GPT-2-124M, concurrency 1/64/256, base and
#          an ARACH A/B mix;
#   peers: the PyTorch peers on the same shapes (eager, and ../shared/tools/compiled_peer.py).
#   Output also goes to $OUT.
#   Worst-case times: tests 7 min (4.5 without failures), bench 6.5 min, serve 3 min, peers 4 min; split across calls to fit the
#   10-minute limit (tests, then bench, with .gpu; then serve+peers with .gpu-serve).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
build=${BUILD_DIR:-build-gpu}
case "$mode" in
  pack)
    set -e
    # The GPU machine's processor is not this one: its host code is built for x86-64-v3 (AVX2, FMA, F16C: every
    # x86 server processor of the last decade), not -march=native, whose AVX-512 it may lack (SIGILL).
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARACH_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DARACH_BUILD_SERVER=ON -DARACH_CPU_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3
    cmake --build "$build" --target ops_test attention_test cuda_conformance_test forward_bench variant_bench engine_bench arach-run \
      arach-server arach-cli
    # Unpacked, the bundle is ~135 MiB (OpenBLAS and ICU data ~65 MiB, fixtures ~58 MiB), over the 64 MiB
    # that a device call carries; packed with xz it is ~60 MiB, and `run` unpacks it on the GPU machine.
    staging="$build/gpu-bundle"
    rm -rf "$staging" .gpu
    ../shared/tools/device-bundle --fixtures gpt2-tiny,neox-tiny,llama-stories260k,refs "$staging" \
      "$build"/tests/ops_test "$build"/tests/attention_test "$build"/tests/cuda_conformance_test \
      "$build"/bench/forward_bench "$build"/bench/variant_bench "$build"/bench/engine_bench "$build"/tools/arach-run
    # The GPU suites read the original fixtures' references only (refs_modern.safetensors, 41 MiB, is for the
    # modern families the CPU suites cover).
    rm -f "$staging"/fixtures/refs/refs_modern.safetensors
    # The server, its client and gRPC's libraries do not fit beside the fixtures: a second bundle, for another call.
    serve_staging="$build/gpu-serve-bundle"
    rm -rf "$serve_staging" .gpu-serve
    ../shared/tools/device-bundle "$serve_staging" "$build"/server/arach-server "$build"/client/arach-cli "$build"/tools/arach-run
    cp bench/serving_bench.sh bench/torch_peer_bench.py ../shared/tools/compiled_peer.py "$serve_staging"/
    # Symbols are not needed to run (the bundle sat within 4 MiB of the limit before they were cut); a failed strip
    # leaves the file as it was.
    find "$staging" "$serve_staging" \( -path '*/bin/*' -o -path '*/lib/*' \) -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
    mkdir -p .gpu .gpu-serve
    # One xz stream with a dictionary larger than the bundle: the seven executables share ~8 MiB of kernels each,
    # which xz -9's 64 MiB window half misses (64.2 MB that way; 60.7 MB so, ~80 s on two cores). Unpacking needs
    # 256 MiB of memory.
    tar -C "$staging" -cf - . | xz -T1 --lzma2=preset=9e,dict=256MiB > .gpu/bundle.tar.xz
    tar -C "$serve_staging" -cf - . | xz -T1 --lzma2=preset=9e,dict=256MiB > .gpu-serve/serve.tar.xz
    ls -l .gpu/bundle.tar.xz .gpu-serve/serve.tar.xz
    for archive in .gpu/bundle.tar.xz .gpu-serve/serve.tar.xz; do
      bytes=$(stat -c %s "$archive")
      if [ "$bytes" -gt $((64 << 20)) ]; then
        echo "$archive is $bytes bytes: over the 64 MiB a device call carries" >&2
        exit 1
      fi
    done
    ;;
  run)
    part=${2:-all}
    out=${OUT:-/tmp/gpu-check}
    mkdir -p "$out"
    # Unpacks ARCHIVE into DIR once (DIR/bin/MARKER says it is there).
    unpack() {
      local archive=$1 dir=$2 marker=$3
      [ -x "$dir/bin/$marker" ] && return 0
      [ -f "$archive" ] || { echo "$archive is missing: carry its folder (pack it first)"; return 1; }
      mkdir -p "$dir"
      # Python's tarfile reads xz too, should the machine lack the xz tool.
      { command -v xz >/dev/null && xz -dc "$archive" | tar -C "$dir" -xf -; } ||
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$dir" ||
        { echo "cannot unpack $archive"; return 1; }
    }
    bundle=${GPU_BUNDLE_DIR:-/tmp/arach-gpu-bundle}
    serve_bundle=${GPU_SERVE_BUNDLE_DIR:-/tmp/arach-gpu-serve-bundle}
    case "$part" in
      tests|bench) unpack .gpu/bundle.tar.xz "$bundle" cuda_conformance_test || exit 1; lib=$bundle/lib ;;
      serve|peers) unpack .gpu-serve/serve.tar.xz "$serve_bundle" arach-server || exit 1; lib=$serve_bundle/lib ;;
      all) unpack .gpu/bundle.tar.xz "$bundle" cuda_conformance_test && unpack .gpu-serve/serve.tar.xz "$serve_bundle" arach-server ||
             exit 1
           lib=$bundle/lib:$serve_bundle/lib ;;
      *) echo "unknown part $part: tests, bench, serve, peers or all"; exit 2 ;;
    esac
    export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-} ARACH_FIXTURES=$bundle/fixtures
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
    status=0
    if [ "$part" = tests ] || [ "$part" = all ]; then
      failed_suites=()
      for t in ops_test attention_test cuda_conformance_test; do
        echo "== $t"
        timeout 90 $bundle/bin/$t --gtest_brief=1 >"$out/$t.txt" 2>&1 || { status=1; failed_suites+=("$t"); }
        tail -25 "$out/$t.txt"
        # Here a skipped GPU case is a failure: the suites skip without a visible device, and then verify nothing.
        if grep -q "no CUDA device" "$out/$t.txt"; then
          echo "!! $t skipped its GPU cases: no CUDA device is visible to it"
          status=1
        fi
      done
      # A failed case is run again under compute-sanitizer's memcheck (launches synchronous), which names the kernel
      # and the access of a fault; 150 s at most in all, the cases of each suite at once. Some machines refuse the
      # tool (device/KINDS.md): then its first lines say so.
      sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      deadline=$((SECONDS + 150))
      for t in "${failed_suites[@]}"; do
        cases=$(grep -o '^\[  FAILED  \] [A-Za-z0-9_/.]*' "$out/$t.txt" | awk '{print $4}' | sort -u | paste -sd: -)
        cases=${cases:-'*'}  # no case named: the suite crashed or timed out, so all of it
        left=$((deadline - SECONDS))
        [ -x "$sanitizer" ] && [ "$left" -gt 10 ] || continue
        echo "== $t under compute-sanitizer memcheck: $cases"
        CUDA_LAUNCH_BLOCKING=1 timeout "$left" "$sanitizer" --tool memcheck --print-limit 10 \
          $bundle/bin/$t --gtest_brief=1 --gtest_filter="$cases" >"$out/$t.memcheck.txt" 2>&1
        grep -m 20 -E '=========|FAILED|error' "$out/$t.memcheck.txt"
      done
      echo "== arach-run generate on cuda"
      timeout 60 $bundle/bin/arach-run generate --device cuda --model $bundle/fixtures/gpt2-tiny --prompt "ROMEO:" \
        --max_new_tokens 16 2>&1 | tail -5 || status=1
    fi
    if [ "$part" = bench ] || [ "$part" = all ]; then
      echo "== forward_bench (ours)"
      timeout 150 $bundle/bin/forward_bench --device cuda --weight_dtype bf16 --fixtures= --presets gpt2/124m,gpt_neox/410m --batches 1,32,256 \
        --prompt_len 128 --decode_steps 128 --repeats 3 --scratch /tmp/arach-bench-models 2>&1 | tee "$out/forward_bench.txt" || status=1
      echo "== variant_bench (ours)"
      timeout 120 $bundle/bin/variant_bench --device cuda --weight_dtype bf16 --preset gpt2/124m --prefill_batch 32 --batches 1,32,256 \
        --decode_steps 128 --scratch /tmp/arach-bench-models 2>&1 | tee "$out/variant_bench.txt" || status=1
      echo "== engine_bench (ours: the serving engine without gRPC; the server itself is not in the bundle)"
      timeout 90 $bundle/bin/engine_bench --device cuda --weight_dtype bf16 --preset gpt2/124m --concurrency 1,64,256 \
        --requests_per_client 2 --prompt_len 128 --max_tokens 128 --max_num_batched_tokens 8192 \
        --scratch /tmp/arach-bench-models 2>&1 | tee "$out/engine_bench.txt" || status=1
      echo "== engine_bench scoring (ours: Backend::ScoreRows at Qwen's 151,936-token vocabulary, 0 and 20 alternatives)"
      for top in 0 20; do
        timeout 100 $bundle/bin/engine_bench --device cuda --weight_dtype bf16 --preset qwen2/0.5b --score \
          --prompt_top_logprobs $top --concurrency 1,8 --requests_per_client 4 --prompt_len 512 --max_num_batched_tokens 4096 \
          --scratch /tmp/arach-bench-models 2>&1 | tee -a "$out/engine_bench_score.txt" || status=1
      done
      echo "== engine_bench embeddings (ours: last-token and mean pooling, the mean's rows summed on the GPU)"
      for pooling in last_token mean; do
        timeout 45 $bundle/bin/engine_bench --device cuda --weight_dtype bf16 --preset qwen2/0.5b --embed --pooling $pooling \
          --concurrency 1,16,64 --requests_per_client 4 --prompt_len 512 --max_num_batched_tokens 8192 \
          --scratch /tmp/arach-bench-models 2>&1 | tee -a "$out/engine_bench_embed.txt" || status=1
      done
    fi
    if [ "$part" = serve ] || [ "$part" = all ]; then
      echo "== arach-cli bench through arach-server --device cuda (gRPC)"
      model=/tmp/arach-serve-gpt2-124m
      [ -f "$model/config.json" ] || timeout 120 $serve_bundle/bin/arach-run make-model --arch gpt2 --preset 124m --dtype BF16 \
        --with_adapter --out "$model" >"$out/make_model.txt" 2>&1 || { status=1; tail -5 "$out/make_model.txt"; }
      # 8 GiB of KV: 256 requests of 256 tokens need ~2.4 GB at bf16.
      for mix in base=1 base=1,arach=1; do
        ARACH_BIN_DIR=$serve_bundle/bin timeout 150 bash $serve_bundle/serving_bench.sh "$model" --device cuda --dtypes bf16 \
          --concurrency 1,64,256 --prompt_len 128 --output_len 128 --requests_per_slot 2 --variant_mix "$mix" \
          --kv_cache_bytes 8589934592 2>&1 | tee -a "$out/serving_bench.txt" || status=1
      done
    fi
    if [ "$part" = peers ] || [ "$part" = all ]; then
      echo "== torch peers"
      timeout 240 python3 $serve_bundle/torch_peer_bench.py --models gpt2-124m,pythia-410m --batches 1,32,256 2>&1 | tee "$out/torch_peers.txt"
      echo "== compiled peer (torch.compile, CUDA graphs)"
      timeout 240 python3 $serve_bundle/compiled_peer.py --shape 124m --batches 1,32,256 --prompt 128 --new 128 2>&1 |
        tee "$out/compiled_peer.txt"
    fi
    exit $status
    ;;
  *)
    sed -n '2,21p' "$0"
    exit 2
    ;;
esac
