// FlashInfer decode attention, f16, head size 64 (flashinfer_kernels.h).
#include "engine/backend/cuda/flashinfer_kernels.cuh"

ARACH_FLASHINFER_ENTRY_POINTS(Decode, kF16, 64)
