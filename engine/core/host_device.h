// Functions the GPU's kernels share with the host: ARACH_HOST_DEVICE is __host__ __device__ under nvcc, nothing
// elsewhere (the C++ compiler, the SIMT simulator's build of the kernels).
#pragma once

#if defined(__CUDACC__)
#define ARACH_HOST_DEVICE __host__ __device__
#else
#define ARACH_HOST_DEVICE
#endif
