// FlashInfer decode attention, bf16, head size 128 (flashinfer_kernels.h).
#include "engine/backend/cuda/flashinfer_kernels.cuh"

ARACH_FLASHINFER_ENTRY_POINTS(Decode, kBF16, 128)
