// The CUDA backend's attention kernels compiled as C++ for the SIMT simulator (include/ replaces the toolkit's
// headers).
#include "engine/backend/cuda/cuda_attention.cu"
