// Load-time weight packing, compiled per target: one call packs one 16-row
// panel (layouts in kernels.hpp), converting source rows in column tiles so the
// tile and the panel blocks it feeds stay in L1. Numerical contract: q8 is
// bit-identical to ref::quantize_weight_row_q8 (scale = f16(amax / 127), IEEE
// division, round half away from zero, clamp to ±127); f16 / bf16 round to nearest even
// exactly as f32_to_f16 / f32_to_bf16 (NaN included); f16 → f32 is exact.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics pass `_mm512_undefined_*()` (a self-initialized
// variable) as the merge source and then warn about it at every use (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// Columns per tile: 16 rows × 256 f32 = 16 KiB, half of a 32-48 KiB L1d.
constexpr int kTile = 256;
constexpr size_t kQ8BlockBytes = 544;  // [8][16 rows][4] biased int8, then f16 scale[16]
constexpr size_t kQ8ScaleOffset = 512;

size_t src_bytes(SrcType st) { return st == SrcType::f32 ? 4 : 2; }

// ---------------------------------------------------------------------------
// Row conversions
// ---------------------------------------------------------------------------

void bf16_to_f32_row(const uint16_t* x, int n, float* y) {
    for (int i = 0; i < n; ++i) {  // vectorizes: a widening shift
        const uint32_t b = uint32_t(x[i]) << 16;
        std::memcpy(y + i, &b, 4);
    }
}

// vcvtph2ps quiets signaling NaNs; f16_to_f32 keeps them: NaN lanes are redone
// with the scalar conversion (never taken on finite weights).
void f16_to_f32_row(const uint16_t* x, int n, float* y) {
    int i = 0;
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
        const __m256i mag = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
        if (!_mm256_testz_si256(_mm256_cmpgt_epi16(mag, _mm256_set1_epi16(0x7c00)),
                                _mm256_set1_epi16(-1)))
            for (int j = i; j < i + 16; ++j) y[j] = f16_to_f32(x[j]);
    }
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
        const __m128i mag = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
        if (_mm_movemask_epi8(_mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7c00))))
            for (int j = i; j < i + 8; ++j) y[j] = f16_to_f32(x[j]);
    }
#endif
    for (; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

// Checkpoint tensors may start at any byte (safetensors offsets are not
// aligned): the element loads below need element alignment, so a misaligned
// row (n <= kTile) is first copied to an aligned buffer.
bool misaligned(const void* p, size_t elem) { return reinterpret_cast<uintptr_t>(p) % elem != 0; }

void src_to_f32_row(SrcType st, const void* src, int n, float* y) {
    alignas(64) uint16_t staged[kTile];
    if (st != SrcType::f32 && misaligned(src, 2)) {
        std::memcpy(staged, src, size_t(n) * 2);
        src = staged;
    }
    switch (st) {
        case SrcType::f32:
            std::memcpy(y, src, size_t(n) * 4);
            return;
        case SrcType::f16:
            f16_to_f32_row(static_cast<const uint16_t*>(src), n, y);
            return;
        case SrcType::bf16:
            bf16_to_f32_row(static_cast<const uint16_t*>(src), n, y);
            return;
    }
}

// vcvtps2ph gives NaNs their truncated payload; f32_to_f16 a canonical quiet
// NaN: NaN lanes are redone with the scalar conversion.
void f32_to_f16_row(const float* x, int n, uint16_t* y) {
    int i = 0;
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))
            for (int j = i; j < i + 16; ++j) y[j] = f32_to_f16(x[j]);
    }
#elif defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
            for (int j = i; j < i + 8; ++j) y[j] = f32_to_f16(x[j]);
    }
#endif
    for (; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

// Same integer rounding as f32_to_bf16, written branch-free so it vectorizes.
void f32_to_bf16_row(const float* x, int n, uint16_t* y) {
    for (int i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, x + i, 4);
        const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        const uint32_t nan = (b >> 16) | 0x40u;
        y[i] = uint16_t((b & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
}

// ---------------------------------------------------------------------------
// q8
// ---------------------------------------------------------------------------

// The weight scale as stored: rounded to IEEE half (finite: capped at 65504).
float half_scale(float s) { return f16_to_f32(f32_to_f16(std::min(s, 65504.0f))); }

// One group of 32 floats (zero padded past the row's end) → 32 bytes q + 128;
// returns the group's scale (a value an IEEE half holds exactly). Operand
// order of min/max follows the reference's std::max / std::min, so even NaN
// inputs give its values.
float quantize_group(const float* x, uint8_t* qb) {
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_abs_ps(x1), _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps())));
    const float s = half_scale(amax / 127.0f);
    if (s == 0.0f) {
        std::memset(qb, 128, kQ8Group);
        return s;
    }
    const __m512 sv = _mm512_set1_ps(s);
    const __m512 sign_mask = _mm512_set1_ps(-0.0f);
    for (int h = 0; h < 2; ++h) {
        const __m512 t = _mm512_div_ps(h ? x1 : x0, sv);
        __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        // t - trunc(t) is exact: step away from zero when it is >= 0.5 in size.
        const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, r)),
                                                  _mm512_set1_ps(0.5f), _CMP_GE_OQ);
        const __m512 one = _mm512_or_ps(_mm512_and_ps(t, sign_mask), _mm512_set1_ps(1.0f));
        r = _mm512_mask_add_ps(r, away, r, one);
        r = _mm512_max_ps(_mm512_min_ps(r, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-127.0f));
        const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), _mm512_set1_epi32(128));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + 16 * h), _mm512_cvtepi32_epi8(q));
    }
    return s;
#elif STATICLM_TARGET == STATICLM_TARGET_GENERIC
    float amax = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) amax = std::max(amax, __builtin_fabsf(x[i]));
    const float s = half_scale(amax / 127.0f);
    for (int i = 0; i < kQ8Group; ++i) {
        int v = 0;
        if (s != 0.0f) {
            const float t = x[i] / s;
            float r = __builtin_truncf(t);
            if (__builtin_fabsf(t - r) >= 0.5f) r += t < 0.0f ? -1.0f : 1.0f;
            v = int(std::max(-127.0f, std::min(127.0f, r)));
        }
        qb[i] = uint8_t(v + 128);
    }
    return s;
#else
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int h = 0; h < 4; ++h)
        m = _mm256_max_ps(_mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 8 * h)), m);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float amax = 0.0f;
    for (float v : lanes) amax = std::max(amax, v);
    const float s = half_scale(amax / 127.0f);
    if (s == 0.0f) {
        std::memset(qb, 128, kQ8Group);
        return s;
    }
    const __m256 sv = _mm256_set1_ps(s);
    for (int h = 0; h < 4; ++h) {
        const __m256 t = _mm256_div_ps(_mm256_loadu_ps(x + 8 * h), sv);
        __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m256 frac = _mm256_andnot_ps(sign_mask, _mm256_sub_ps(t, r));
        const __m256 away = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
        const __m256 one = _mm256_or_ps(_mm256_and_ps(t, sign_mask), _mm256_set1_ps(1.0f));
        r = _mm256_add_ps(r, _mm256_and_ps(away, one));
        r = _mm256_max_ps(_mm256_min_ps(r, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
        const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(r), _mm256_set1_epi32(128));
        // 8 × int32 in 0..254 → 8 bytes, in order.
        const __m128i w =
            _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(qb + 8 * h), _mm_packus_epi16(w, w));
    }
    return s;
#endif
}

void pack_q8(SrcType st, const std::byte* src, size_t ld, int rows, int k, std::byte* dst) {
    alignas(64) float buf[kTile];
    alignas(64) uint8_t qb[kQ8Group];
    const size_t esize = src_bytes(st);
    for (int c0 = 0; c0 < k; c0 += kTile) {
        const int len = std::min(kTile, k - c0);
        const int n_groups = (len + kQ8Group - 1) / kQ8Group;
        std::byte* blocks = dst + size_t(c0 / kQ8Group) * kQ8BlockBytes;
        std::fill(buf + len, buf + n_groups * kQ8Group, 0.0f);
        for (int r = 0; r < kPanelRows; ++r) {
            if (r < rows) src_to_f32_row(st, src + (size_t(r) * ld + size_t(c0)) * esize, len, buf);
            for (int g = 0; g < n_groups; ++g) {
                std::byte* block = blocks + size_t(g) * kQ8BlockBytes;
                float s = 0.0f;
                if (r < rows)
                    s = quantize_group(buf + g * kQ8Group, qb);
                else
                    std::memset(qb, 128, kQ8Group);  // padding row: q = 0
                const uint16_t h = f32_to_f16(s);  // exact: s is a half already
                std::memcpy(block + kQ8ScaleOffset + size_t(r) * 2, &h, 2);
                for (int j = 0; j < kQ8Group / 4; ++j)  // [k/4 = 8][16 rows][4]
                    std::memcpy(block + j * 64 + r * 4, qb + 4 * j, 4);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// f32 / f16 / bf16 panels
// ---------------------------------------------------------------------------

// tile [16][kTile] of T → out [cols][16] (out already offset to the tile's
// first column; any alignment, so elements are stored with memcpy).
template <class T>
void transpose_tile(const T* tile, size_t tile_ld, int cols, std::byte* out) {
    for (int c = 0; c < cols; ++c)
        for (int r = 0; r < kPanelRows; ++r)
            std::memcpy(out + (size_t(c) * kPanelRows + size_t(r)) * sizeof(T),
                        tile + size_t(r) * tile_ld + c, sizeof(T));
}

// Source row segment → n elements of the panel's element type.
void convert_row(WeightType type, SrcType st, const std::byte* src, int n, float* fbuf, void* out) {
    if (type == WeightType::f32) return src_to_f32_row(st, src, n, static_cast<float*>(out));
    auto* h = static_cast<uint16_t*>(out);
    if ((type == WeightType::f16 && st == SrcType::f16) ||
        (type == WeightType::bf16 && st == SrcType::bf16)) {
        std::memcpy(h, src, size_t(n) * 2);
        return;
    }
    const float* f = reinterpret_cast<const float*>(src);
    if (st != SrcType::f32) {
        src_to_f32_row(st, src, n, fbuf);
        f = fbuf;
    } else if (misaligned(src, 4)) {
        std::memcpy(fbuf, src, size_t(n) * 4);
        f = fbuf;
    }
    if (type == WeightType::f16)
        f32_to_f16_row(f, n, h);
    else
        f32_to_bf16_row(f, n, h);
}

void pack_float(WeightType type, SrcType st, const std::byte* src, size_t ld, int rows, int k,
                std::byte* dst) {
    alignas(64) uint32_t
        tile[kPanelRows * kTile];  // [16][kTile] f32, or [16][kTile] uint16 in the first half
    alignas(64) float fbuf[kTile];
    const size_t esize = src_bytes(st);
    const int ebytes = type == WeightType::f32 ? 4 : 2;
    for (int c0 = 0; c0 < k; c0 += kTile) {
        const int len = std::min(kTile, k - c0);
        const int len_even = (len + 1) / 2 * 2;
        for (int r = 0; r < kPanelRows; ++r) {
            std::byte* row =
                reinterpret_cast<std::byte*>(tile) + size_t(r) * kTile * size_t(ebytes);
            if (r < rows)
                convert_row(type, st, src + (size_t(r) * ld + size_t(c0)) * esize, len, fbuf, row);
            else
                std::memset(row, 0, size_t(len_even) * size_t(ebytes));
            if (type == WeightType::bf16 && len_even != len)
                std::memset(row + len * 2, 0, 2);  // k padded to even
        }
        switch (type) {
            case WeightType::f32:  // [k][16]
                transpose_tile(tile, kTile, len, dst + size_t(c0) * kPanelRows * 4);
                break;
            case WeightType::f16:  // [k][16]
                transpose_tile(reinterpret_cast<const uint16_t*>(tile), kTile, len,
                               dst + size_t(c0) * kPanelRows * 2);
                break;
            case WeightType::bf16:  // [k/2][16][2]: a pair along k moves as one uint32
                transpose_tile(tile, kTile / 2, len_even / 2, dst + size_t(c0 / 2) * kPanelRows * 4);
                break;
            case WeightType::q8:
                break;
        }
    }
}

}  // namespace

void pack_panel(WeightType type, SrcType src_type, const void* src, size_t ld, int rows, int k,
                std::byte* dst) {
    if (k <= 0) return;
    const auto* s = static_cast<const std::byte*>(src);
    if (type == WeightType::q8)
        pack_q8(src_type, s, ld, rows, k, dst);
    else
        pack_float(type, src_type, s, ld, rows, k, dst);
}

}  // namespace staticlm::kernels::STATICLM_NS
