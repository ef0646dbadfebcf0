// Every M from 1 to 33 against single rows, for every weight format (the
// integer ones at 8- and 16-bit activations) on every target: a row of an
// M-row call must have the bits of the same row computed alone, whatever
// register tile (and its size when M is split evenly into tiles), cache
// block, prefetch slice or thread split it falls in. The batched runtime
// relies on it (docs/BATCH.md: batched rows are bit-identical to solo
// sessions).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "tests/kernels/targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

constexpr int kMaxM = 33;

struct Packed {
    Buffer buf;
    PackedMatrix w;
};

Packed pack(WeightType type, const std::vector<float>& src, int n, int k, int act_bits) {
    Packed p;
    const size_t bytes = packed_bytes(type, n, k);
    p.buf = Buffer(std::max<size_t>(bytes, 64));
    pack_weights(type, SrcType::f32, src.data(), n, k, 0, n, p.buf.data());
    p.w = PackedMatrix{type, n, k, p.buf.data(), bytes};
    p.w.act_bits = act_bits;
    return p;
}

bool is_integer(WeightType t) {
    return t != WeightType::f32 && t != WeightType::f16 && t != WeightType::bf16;
}

}  // namespace

TEST_CASE("matmul: each M from 1 to 33 gives every row the bits of its solo call (every format, every target)") {
    struct Shape {
        int n, k;
    };
    // 150 outputs: 10 panels (5 pairs: two cache blocks, the second one
    // partial, a partial last panel), so the next-block prefetch and the
    // panel split both run; 20 outputs at k = 512: 2 panels, where threads
    // split the rows.
    for (const Shape s : {Shape{150, 256}, Shape{20, 512}}) {
        std::mt19937 rng(uint32_t(s.n * 31 + s.k));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(size_t(s.n) * size_t(s.k));
        for (float& v : w) v = normal(rng) * 0.05f;
        const size_t ldx = size_t(s.k) + 5;
        std::vector<float> x(size_t(kMaxM) * ldx);
        for (float& v : x) v = normal(rng);
        std::vector<float> solo(size_t(kMaxM) * size_t(s.n)), y(size_t(kMaxM) * size_t(s.n));
        for (size_t ti = 0; ti < kNumWeightTypes; ++ti) {
            const auto type = WeightType(ti);
            for (int act_bits : {8, 16}) {
                if (act_bits == 16 && !is_integer(type)) continue;
                const Packed p = pack(type, w, s.n, s.k, act_bits);
                Buffer scratch(std::max<size_t>(matmul_scratch_bytes(type, kMaxM, s.k), 64));
                for_each_target([&](const KernelTable& kt) {
                    INFO(std::string(weight_type_name(type)) << " act_bits=" << act_bits << " n=" << s.n
                                                             << " k=" << s.k);
                    for (int r = 0; r < kMaxM; ++r)
                        matmul(kt, p.w, x.data() + size_t(r) * ldx, ldx, 1, solo.data() + size_t(r) * size_t(s.n),
                               size_t(s.n), scratch.data(), 1);
                    std::string differing;
                    for (int m = 1; m <= kMaxM; ++m) {
                        const int threads = 1 + m % 3;
                        std::fill(y.begin(), y.end(), -1.0f);
                        matmul(kt, p.w, x.data(), ldx, m, y.data(), size_t(s.n), scratch.data(), threads);
                        for (int r = 0; r < m; ++r)
                            if (std::memcmp(y.data() + size_t(r) * size_t(s.n), solo.data() + size_t(r) * size_t(s.n),
                                            size_t(s.n) * sizeof(float)) != 0)
                                differing += " M=" + std::to_string(m) + "/row " + std::to_string(r);
                    }
                    CHECK_MESSAGE(differing.empty(), "rows differing from their solo call:", differing);
                });
            }
        }
    }
}
