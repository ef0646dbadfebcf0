// RoPE (rotate-half) for one target (compiled per target): pairs j, j + d/2
// of each head. Per token, cos/sin of angle = float(pos) * inv_freq[j] (fp32
// product, as transformers) are computed once with vec::sincos and applied to
// every head. The vector body rounds each product and then adds (a·c - b·s as
// (-b)·s + a·c); the scalar tail uses std::fma, one rounding. Zero angles
// leave both dims bit-exact.
#include <algorithm>
#include <cmath>

#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {
using vec::F;
constexpr size_t kLanes = size_t(vec::kLanes);
// Pairs per cos/sin block: 128 covers head_dim 256 in one block; two 512-byte
// tables stay in L1 while every head of the token is rotated.
constexpr int kChunk = 128;
static_assert(kChunk % kLanes == 0);
}  // namespace

void rope(float* x, size_t ldx, int t, int n_heads, int head_dim, int pos0,
          const float* inv_freq) {
    const int half = head_dim / 2;
    alignas(64) float freq[kChunk];
    alignas(64) float cs[kChunk];
    alignas(64) float sn[kChunk];
    const F zero = vec::zero();
    for (int i = 0; i < t; ++i) {
        const F pos = vec::set1(float(pos0 + i));
        float* xt = x + size_t(i) * ldx;
        for (int j0 = 0; j0 < half; j0 += kChunk) {
            const size_t nj = size_t(std::min(kChunk, half - j0));
            const size_t nj_pad = (nj + kLanes - 1) / kLanes * kLanes;
            std::fill(std::copy(inv_freq + j0, inv_freq + j0 + nj, freq), freq + nj_pad, 0.0f);
            for (size_t j = 0; j < nj_pad; j += kLanes) {
                F s, c;
                vec::sincos(vec::mul(pos, vec::load(freq + j)), s, c);
                vec::store(sn + j, s);
                vec::store(cs + j, c);
            }
            for (int h = 0; h < n_heads; ++h) {
                float* a = xt + size_t(h) * head_dim + j0;
                float* b = a + half;
                size_t j = 0;
                for (; j + kLanes <= nj; j += kLanes) {
                    const F va = vec::load(a + j), vb = vec::load(b + j);
                    const F c = vec::load(cs + j), s = vec::load(sn + j);
                    // sin == 0 only for a zero angle: keep the inputs (and -0, inf) as they are.
                    const vec::Mask keep = vec::eq(s, zero);
                    const F ra = vec::add(vec::mul(vec::neg(vb), s), vec::mul(va, c));
                    const F rb = vec::add(vec::mul(va, s), vec::mul(vb, c));
                    vec::store(a + j, vec::select(keep, va, ra));
                    vec::store(b + j, vec::select(keep, vb, rb));
                }
                for (; j < nj; ++j) {
                    if (sn[j] == 0.0f) continue;
                    const float va = a[j], vb = b[j];
                    a[j] = std::fma(-vb, sn[j], va * cs[j]);
                    b[j] = std::fma(va, sn[j], vb * cs[j]);
                }
            }
        }
    }
}

}  // namespace staticlm::kernels::STATICLM_NS
