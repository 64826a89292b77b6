// The CUDA backend's hub merge kernel compiled as C++ for the SIMT simulator (include/ replaces the
// toolkit's headers).
#include "engine/backend/cuda/cuda_hub_merge.cu"
