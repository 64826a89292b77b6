#include "engine/backend/op_checks.h"

#include "absl/strings/str_cat.h"

namespace arach::op_checks {
namespace {

std::string Shape(const DeviceMatrix& m) { return absl::StrCat("[", m.rows, ", ", m.cols, "]"); }

absl::Status Mismatch(const char* op, absl::string_view what) {
  return absl::InternalError(absl::StrCat(op, ": ", what));
}

bool Empty(const DeviceMatrix& m) { return m.data == nullptr; }

}  // namespace

absl::Status CheckEmbed(const DeviceMatrix& table, const DeviceMatrix& position_table, const DeviceMatrix& out) {
  if (table.cols != out.cols) return Mismatch("embed", absl::StrCat("table ", Shape(table), " vs out ", Shape(out)));
  if (!Empty(position_table) && position_table.cols != out.cols) {
    return Mismatch("embed", absl::StrCat("position table ", Shape(position_table), " vs out ", Shape(out)));
  }
  return absl::OkStatus();
}

absl::Status CheckNorm(const char* op, const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                       const DeviceMatrix& out) {
  if (in.rows != out.rows || in.cols != out.cols) return Mismatch(op, absl::StrCat("in ", Shape(in), " vs out ", Shape(out)));
  if (weight.rows * weight.cols != in.cols) return Mismatch(op, absl::StrCat("weight ", Shape(weight), " vs in ", Shape(in)));
  if (!Empty(bias) && bias.rows * bias.cols != in.cols) return Mismatch(op, absl::StrCat("bias ", Shape(bias), " vs in ", Shape(in)));
  return absl::OkStatus();
}

absl::Status CheckNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight) {
  if (static_cast<int64_t>(heads) * head_dim != x.cols || head_dim <= 0) {
    return Mismatch("head rms norm", absl::StrCat(heads, " heads of ", head_dim, " vs x ", Shape(x)));
  }
  if (weight.rows * weight.cols != head_dim) {
    return Mismatch("head rms norm", absl::StrCat("weight ", Shape(weight), " vs head_dim ", head_dim));
  }
  return absl::OkStatus();
}

absl::Status CheckLinear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out) {
  if (in.cols != weight.cols || out.rows != in.rows || out.cols != weight.rows) {
    return Mismatch("linear", absl::StrCat("in ", Shape(in), " x weight ", Shape(weight), "^T -> out ", Shape(out)));
  }
  if (!Empty(bias) && bias.rows * bias.cols != out.cols) {
    return Mismatch("linear", absl::StrCat("bias ", Shape(bias), " vs out ", Shape(out)));
  }
  return absl::OkStatus();
}

absl::Status CheckRope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim) {
  if (static_cast<int64_t>(heads) * head_dim != x.cols) {
    return Mismatch("rope", absl::StrCat(heads, " heads of ", head_dim, " vs x ", Shape(x)));
  }
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
    return Mismatch("rope", absl::StrCat("rotary_dim ", rotary_dim, " must be even, in (0, ", head_dim, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckGatedActivate(const DeviceMatrix& in, const DeviceMatrix& out) {
  if (in.rows != out.rows || in.cols != 2 * out.cols) {
    return Mismatch("gated activation", absl::StrCat("in ", Shape(in), " vs out ", Shape(out), " (in must be [M, 2I])"));
  }
  return absl::OkStatus();
}

absl::Status CheckSameShape(const char* op, const DeviceMatrix& a, const DeviceMatrix& b) {
  if (a.rows != b.rows || a.cols != b.cols) return Mismatch(op, absl::StrCat(Shape(a), " vs ", Shape(b)));
  return absl::OkStatus();
}

absl::Status CheckWriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const PagedKvLayer& kv) {
  const int64_t slot = static_cast<int64_t>(kv.num_kv_heads) * kv.head_dim;
  if (k.cols != slot || v.cols != slot || k.rows != v.rows) {
    return Mismatch("kv write", absl::StrCat("k ", Shape(k), ", v ", Shape(v), " vs ", kv.num_kv_heads, " kv heads of ", kv.head_dim));
  }
  return absl::OkStatus();
}

absl::Status CheckAttentionHeadDim(int head_dim, int max_head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > max_head_dim) {
    return absl::UnimplementedError(absl::StrCat("attention: head size ", head_dim, " is not supported on this device (even, at most ",
                                                 max_head_dim, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckAttention(const AttentionParams& p, int max_head_dim) {
  if (absl::Status s = CheckAttentionHeadDim(p.kv.head_dim, max_head_dim); !s.ok()) return s;
  const int64_t width = static_cast<int64_t>(p.num_heads) * p.kv.head_dim;
  const int64_t rows = static_cast<int64_t>(p.num_verbal_rows) + p.num_hub_rows;
  if (p.kv.num_kv_heads <= 0 || p.num_heads % p.kv.num_kv_heads != 0) {
    return Mismatch("attention", absl::StrCat(p.num_heads, " query heads are not a multiple of ", p.kv.num_kv_heads, " kv heads"));
  }
  if (p.q.cols != width || p.out.cols != width || p.q.rows != rows || p.out.rows != rows) {
    return Mismatch("attention", absl::StrCat("q ", Shape(p.q), ", out ", Shape(p.out), " vs ", rows, " rows of ", p.num_heads,
                                              " heads of ", p.kv.head_dim));
  }
  if (p.num_hub_rows > 0 && (p.hub_k.rows != p.num_hub_rows || p.hub_v.rows != p.num_hub_rows ||
                             p.hub_k.cols != static_cast<int64_t>(p.kv.num_kv_heads) * p.kv.head_dim)) {
    return Mismatch("attention", absl::StrCat("hub k ", Shape(p.hub_k), ", hub v ", Shape(p.hub_v), " vs ", p.num_hub_rows, " hub rows"));
  }
  if (p.sliding_window < 0) return Mismatch("attention", absl::StrCat("sliding window ", p.sliding_window, " is negative"));
  return absl::OkStatus();
}

absl::Status CheckRowCopy(const char* op, const DeviceMatrix& src, const DeviceMatrix& dst) {
  if (src.cols != dst.cols) return Mismatch(op, absl::StrCat("src ", Shape(src), " vs dst ", Shape(dst)));
  return absl::OkStatus();
}

absl::Status CheckSumRows(const DeviceMatrix& src, const DeviceMatrix& sum) {
  if (src.rows < 1 || sum.rows != 1 || sum.cols != src.cols || sum.dtype != DType::kF32) {
    return Mismatch("sum rows", absl::StrCat("src ", Shape(src), " vs sum ", Shape(sum), " (", DTypeName(sum.dtype), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckSampleTokens(const DeviceMatrix& logits, std::span<const SamplerInput> rows, size_t tokens, size_t logprobs) {
  if (logits.dtype != DType::kF32 || logits.stride != logits.cols || logits.rows != static_cast<int64_t>(rows.size()) ||
      tokens != rows.size() || (logprobs != 0 && logprobs != rows.size())) {
    return Mismatch("sample tokens", absl::StrCat("logits ", Shape(logits), " (", DTypeName(logits.dtype), ") vs ", rows.size(),
                                                  " rows, ", tokens, " token slots and ", logprobs, " log-prob slots"));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].params == nullptr) return Mismatch("sample tokens", absl::StrCat("row ", i, " has no sampling parameters"));
  }
  return absl::OkStatus();
}

absl::Status CheckScoreRows(const DeviceMatrix& logits, std::span<const int32_t> targets, size_t scores, size_t top) {
  if (logits.dtype != DType::kF32 || logits.stride != logits.cols || logits.rows != static_cast<int64_t>(targets.size()) ||
      scores != targets.size() || (top != 0 && (targets.empty() || top % targets.size() != 0)) ||
      (!targets.empty() && top / targets.size() > static_cast<size_t>(logits.cols))) {
    return Mismatch("score rows", absl::StrCat("logits ", Shape(logits), " (", DTypeName(logits.dtype), ") vs ", targets.size(),
                                               " targets, ", scores, " score slots and ", top, " alternative slots"));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] >= logits.cols) {
      return Mismatch("score rows", absl::StrCat("target ", targets[i], " of row ", i, " is outside the ", logits.cols, " columns"));
    }
  }
  return absl::OkStatus();
}

}  // namespace arach::op_checks
