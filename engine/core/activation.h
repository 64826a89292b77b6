// The elementwise activations of transformer MLPs (and the adapter's SiLU). Shared by the model
// description (engine/model) and the kernels (engine/backend), which is why it lives at the bottom.
#pragma once

namespace arach {

enum class Activation {
  kGeluTanh,  // GPT-2 "gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kGeluErf,   // exact GELU: 0.5 x (1 + erf(x / sqrt(2)))
  kSilu,      // x * sigmoid(x)
  kRelu,      // max(x, 0)
};

}  // namespace arach
