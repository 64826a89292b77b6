#include "tools/make_model/synthetic_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/tokenizer/byte_level.h"
#include "nlohmann/json.hpp"

namespace arach {

absl::Status WriteSyntheticTokenizer(const std::string& dir, int vocab_size, uint64_t seed) {
  if (vocab_size < 258) return absl::InvalidArgumentError(absl::StrCat("synthetic tokenizer: vocab_size ", vocab_size, " < 258"));
  const ByteLevelAlphabet alphabet;
  nlohmann::ordered_json vocab;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    vocab[alphabet.Symbol(static_cast<uint8_t>(b))] = b;
    tokens.push_back(alphabet.Symbol(static_cast<uint8_t>(b)));
  }
  // Merges grow word-like tokens: (an existing short token) + (a lowercase letter).
  std::vector<std::string> pool = {alphabet.Symbol(' ')};
  for (char c = 'a'; c <= 'z'; ++c) pool.push_back(std::string(1, c));
  std::unordered_set<std::string> known(tokens.begin(), tokens.end());
  std::mt19937_64 rng(seed ^ 0x5eedb1e5ull);
  std::vector<std::string> merges;
  while (static_cast<int>(tokens.size()) < vocab_size - 1) {
    const std::string& left = pool[rng() % pool.size()];
    const std::string right(1, static_cast<char>('a' + rng() % 26));
    const std::string merged = left + right;
    if (known.count(merged) != 0) continue;
    known.insert(merged);
    merges.push_back(left + " " + right);
    vocab[merged] = static_cast<int>(tokens.size());
    tokens.push_back(merged);
    if (merged.size() < 10) pool.push_back(merged);
  }
  vocab["<|endoftext|>"] = vocab_size - 1;

  const std::filesystem::path root(dir);
  std::ofstream vocab_out(root / "vocab.json");
  vocab_out << vocab.dump() << "\n";
  std::ofstream merges_out(root / "merges.txt");
  merges_out << "#version: 0.2\n";
  for (const std::string& m : merges) merges_out << m << "\n";
  if (!vocab_out || !merges_out) return absl::DataLossError(absl::StrCat(dir, ": cannot write the synthetic tokenizer"));
  return absl::OkStatus();
}

}  // namespace arach
