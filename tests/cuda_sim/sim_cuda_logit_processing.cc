// The CUDA backend's logit-processing kernel compiled as C++ for the SIMT simulator (include/ replaces the
// toolkit's headers).
#include "engine/backend/cuda/cuda_logit_processing.cu"
