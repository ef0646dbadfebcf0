// AMX tile instructions for the avx512 kernel bodies built with STATICLM_AMX
// (kernels/meson.build): a tile configuration type and the instructions as
// inline assembly with tile numbers as literals. Dispatch enables the
// avx512_amx table only where the CPU has AMX-TILE/INT8/BF16 and Linux granted
// the tile state (kernels/dispatch.cpp).
//
// GCC's intrinsics are asm without memory operands or clobbers, so a tile
// store would not be ordered against the C++ loads that read its result.
// Here a store names the bytes it writes as an output operand; loads of data
// written inside the same function name theirs as an input (SLM_TILE_LOAD_M);
// other loads read data written before the matmul's parallel region, ordered
// by configure()'s memory clobber. No instruction in a hot loop clobbers
// "memory": that would keep register accumulators in memory.
#pragma once

#include <cstdint>

namespace staticlm::kernels::amx {

// Palette 1: rows and bytes per row of tiles tmm0-7 (16 × 64 at most).
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Loads the configuration for this thread (zeroing every tile); release()
// returns the tile state to its initial, unsaved form.
inline void configure(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c) : "memory"); }
inline void release() { __asm__ volatile("tilerelease" ::: "memory"); }

}  // namespace staticlm::kernels::amx

#define SLM_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t :::)
#define SLM_TILE_LOAD(t, base, stride) \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(long(stride)))
// A load of `bytes` contiguous bytes the compiler must see written first.
#define SLM_TILE_LOAD_M(t, base, stride, bytes)                                        \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(long(stride)), \
                     "m"(*reinterpret_cast<const uint8_t(*)[bytes]>(base)))
// A store of `rows` rows of 64 bytes at `stride`, named as written.
#define SLM_TILE_STORE(t, base, stride, rows)                                        \
    __asm__ volatile("tilestored %%tmm" #t ", (%1,%2,1)"                            \
                     : "=m"(*reinterpret_cast<uint8_t(*)[(rows) * 64]>(base))       \
                     : "r"(base), "r"(long(stride)))
// c += a (signed int8) · b (unsigned int8), 4-byte dot products into int32.
#define SLM_TILE_DPBSUD(c, a, b) \
    __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c :::)
// c += a (signed int8) · b (signed int8).
#define SLM_TILE_DPBSSD(c, a, b) \
    __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c :::)
// c += a · b, bf16 pairs into fp32.
#define SLM_TILE_DPBF16PS(c, a, b) \
    __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c :::)
