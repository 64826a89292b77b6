// A tokenizer's load time and its encode and decode throughput: each tokenizer folder of --tokenizers (by default the
// fixtures' Qwen3, Llama 3 and Llama 2 tokenizers) loaded --repeats times (median ms), then the fixtures' Tiny
// Shakespeare (1.1 MB of English) encoded in pieces of about 2 KB (paragraphs, as prompts are) and the ids decoded back,
// in MB/s and tokens/s (the median of --repeats passes).
//
//   build/bench/tokenizer_bench [--tokenizers DIR,...] [--fixtures_dir ../shared/fixtures] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "bench/bench_flags.h"
#include "bench/bench_util.h"
#include "engine/core/mapped_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace arach::bench {
namespace {

// `text` cut after the first blank line past every `size` bytes.
std::vector<std::string> Paragraphs(const std::string& text, size_t size) {
  std::vector<std::string> pieces;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find("\n\n", std::min(text.size(), begin + size));
    end = end == std::string::npos ? text.size() : end + 2;
    pieces.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return pieces;
}

int Run() {
  const std::string fixtures = absl::GetFlag(FLAGS_fixtures_dir);
  std::vector<std::string> dirs = absl::GetFlag(FLAGS_tokenizers);
  if (dirs.empty()) {
    for (const char* name : {"qwen3", "llama3", "llama2"}) dirs.push_back(fixtures + "/tokenizers/" + name);
  }
  const absl::StatusOr<std::string> text = ReadFileToString(fixtures + "/data/tinyshakespeare.txt");
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", std::string(text.status().message()).c_str());
    return 1;
  }
  const std::vector<std::string> pieces = Paragraphs(*text, 2048);
  const double megabytes = static_cast<double>(text->size()) / 1e6;
  const int repeats = absl::GetFlag(FLAGS_repeats);
  std::printf("%-40s %10s %12s %14s %12s %14s\n", "tokenizer", "load ms", "encode MB/s", "encode tok/s", "decode MB/s",
              "decode tok/s");
  for (const std::string& dir : dirs) {
    std::vector<double> loads, encodes, decodes;
    std::unique_ptr<Tokenizer> tokenizer;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::unique_ptr<Tokenizer>> loaded = LoadTokenizer(dir);
      loads.push_back(Seconds(start) * 1e3);
      if (!loaded.ok()) {
        std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
        return 1;
      }
      tokenizer = std::move(*loaded);
    }
    std::vector<std::vector<int32_t>> ids(pieces.size());
    size_t tokens = 0;
    for (int r = 0; r < repeats; ++r) {
      tokens = 0;
      const auto start = std::chrono::steady_clock::now();
      for (size_t i = 0; i < pieces.size(); ++i) {
        absl::StatusOr<std::vector<int32_t>> encoded = tokenizer->Encode(pieces[i], /*add_special_tokens=*/false);
        if (!encoded.ok()) {
          std::fprintf(stderr, "%s: %s\n", dir.c_str(), std::string(encoded.status().message()).c_str());
          return 1;
        }
        ids[i] = std::move(*encoded);
        tokens += ids[i].size();
      }
      encodes.push_back(Seconds(start));
    }
    size_t decoded_bytes = 0;
    for (int r = 0; r < repeats; ++r) {
      decoded_bytes = 0;
      const auto start = std::chrono::steady_clock::now();
      for (const std::vector<int32_t>& piece : ids) {
        absl::StatusOr<std::string> back = tokenizer->Decode(piece, /*skip_special_tokens=*/false);
        if (!back.ok()) {
          std::fprintf(stderr, "%s: %s\n", dir.c_str(), std::string(back.status().message()).c_str());
          return 1;
        }
        decoded_bytes += back->size();
      }
      decodes.push_back(Seconds(start));
    }
    const double encode_s = Median(encodes), decode_s = Median(decodes);
    std::printf("%-40s %10.1f %12.2f %14.0f %12.2f %14.0f\n", dir.c_str(), Median(loads), megabytes / encode_s,
                static_cast<double>(tokens) / encode_s, static_cast<double>(decoded_bytes) / 1e6 / decode_s,
                static_cast<double>(tokens) / decode_s);
  }
  return 0;
}

}  // namespace
}  // namespace arach::bench

int main(int argc, char** argv) {
  return arach::bench::BenchmarkMain(argc, argv, {"tokenizer_bench", "a tokenizer's load time and encode / decode throughput",
                                                  arach::bench::kTokenizerBenchFlags},
                                     arach::bench::Run);
}
