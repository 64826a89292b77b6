// The CUDA backend's sampling pipeline compiled as C++ for the SIMT simulator (include/ replaces the toolkit's
// headers; FlashInfer's stages come from flashinfer_sampling_stand_in.cc).
#include "engine/backend/cuda/cuda_sampling.cu"
