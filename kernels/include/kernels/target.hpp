// Included first by every per-target kernel body (kernels/simd/*.cpp). Meson
// compiles those bodies once per target with -DSTATICLM_TARGET=<id> and the
// target's -m flags; this header names the target's namespace and xsimd arch.
// Instruction sets are named only in kernels/simd/vec.hpp (the vector layer
// the bodies are written against) and kernels/simd/probe.cpp (peak loops).
#pragma once

// GCC's AVX-512 headers build results from `_mm512_undefined_*()` (a
// self-initialized variable), and -Wmaybe-uninitialized reports it wherever
// such an intrinsic or xsimd's math inlines (GCC PR 105593): a false positive,
// silenced for the kernel bodies; set before the first intrinsics header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <xsimd/xsimd.hpp>

#include "kernels/kernels.hpp"

#define STATICLM_TARGET_GENERIC 0
#define STATICLM_TARGET_AVX2 1
#define STATICLM_TARGET_AVX2_VNNI 2
#define STATICLM_TARGET_AVX512 3

#if !defined(STATICLM_TARGET)
#error "kernels/simd/*.cpp must be compiled with -DSTATICLM_TARGET=<id> (see kernels/meson.build)"
#endif

#if STATICLM_TARGET == STATICLM_TARGET_AVX512
#define STATICLM_NS avx512
namespace staticlm::kernels::avx512 {
using Arch = xsimd::avx512bw;
inline constexpr Target kTarget = Target::avx512;
}
#elif STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
#define STATICLM_NS avx2_vnni
namespace staticlm::kernels::avx2_vnni {
using Arch = xsimd::avx2;
inline constexpr Target kTarget = Target::avx2_vnni;
}
#elif STATICLM_TARGET == STATICLM_TARGET_AVX2
#define STATICLM_NS avx2
namespace staticlm::kernels::avx2 {
using Arch = xsimd::avx2;
inline constexpr Target kTarget = Target::avx2;
}
#else
#define STATICLM_NS generic
namespace staticlm::kernels::generic {
using Arch = xsimd::default_arch;
inline constexpr Target kTarget = Target::generic;
}
#endif
