// The modules.json of a Sentence-Transformers folder as Sentence-Transformers writes it for a decoder model: the
// model itself (its sentence_bert_config.json at the folder's root), a Pooling module in 1_Pooling/ and a Normalize
// module. Tests add 1_Pooling/config.json (and the optional files) to it.
#pragma once

namespace arach::testing {

inline constexpr char kSentenceTransformersModules[] = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";

}  // namespace arach::testing
