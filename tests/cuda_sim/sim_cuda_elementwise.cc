// The CUDA backend's elementwise kernels compiled as C++ for the SIMT simulator (include/ replaces the toolkit's
// headers).
#include "engine/backend/cuda/cuda_elementwise.cu"
