// Row invariance of every matmul on every target: a row's output bits do not
// depend on how many rows the call has, where the row falls in the register
// tiles and cache blocks, or the thread count. The batched runtime relies on
// it: a sequence decoded in an M-row step must get the logits it gets alone.
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

struct Packed {
    Buffer buf;
    PackedMatrix w;
};

Packed pack(WeightType type, const std::vector<float>& src, int n, int k) {
    Packed p;
    const size_t bytes = packed_bytes(type, n, k);
    p.buf = Buffer(std::max<size_t>(bytes, 64));
    pack_weights(type, SrcType::f32, src.data(), n, k, 0, n, p.buf.data());
    p.w = PackedMatrix{type, n, k, p.buf.data(), bytes};
    return p;
}

// y rows [m][n] of x rows [r0, r0 + m) (ld floats apart).
std::vector<float> run(const KernelTable& kt, const PackedMatrix& w, const std::vector<float>& x, size_t ldx,
                       int r0, int m, int threads) {
    std::vector<float> y(size_t(m) * size_t(w.n) + 1, -1.0f);
    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(w.type, m, w.k), 64));
    matmul(kt, w, x.data() + size_t(r0) * ldx, ldx, m, y.data(), size_t(w.n), scratch.data(), threads);
    return y;
}

}  // namespace

TEST_CASE("matmul rows do not depend on M, tile position or threads (every type, every target)") {
    struct Shape {
        int n, k;
    };
    const int m_all = 29;  // spans several register tiles of every target, with tails
    for (const Shape s : {Shape{100, 300}, Shape{37, 64}, Shape{300, 2048}}) {
        std::mt19937 rng(uint32_t(s.n * 7 + s.k));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(size_t(s.n) * size_t(s.k));
        for (float& v : w) v = normal(rng) * 0.05f;
        const size_t ldx = size_t(s.k) + 3;
        std::vector<float> x(size_t(m_all) * ldx);
        for (float& v : x) v = normal(rng);
        for (WeightType type : {WeightType::q8, WeightType::f32, WeightType::f16, WeightType::bf16}) {
            const Packed p = pack(type, w, s.n, s.k);
            for_each_target([&](const KernelTable& kt) {
                INFO(std::string(weight_type_name(type)) << " n=" << s.n << " k=" << s.k);
                const std::vector<float> all = run(kt, p.w, x, ldx, 0, m_all, 2);
                int differing = 0;
                for (int r = 0; r < m_all; ++r)
                    for (int threads : {1, 2}) {
                        const std::vector<float> one = run(kt, p.w, x, ldx, r, 1, threads);
                        differing += std::memcmp(one.data(), all.data() + size_t(r) * size_t(s.n),
                                                 size_t(s.n) * sizeof(float)) != 0;
                    }
                // Blocks that start mid-tile: rows [3, 3 + 11) and [7, 7 + 5).
                for (auto [r0, m] : {std::pair{3, 11}, std::pair{7, 5}}) {
                    const std::vector<float> part = run(kt, p.w, x, ldx, r0, m, 3);
                    differing += std::memcmp(part.data(), all.data() + size_t(r0) * size_t(s.n),
                                             size_t(m) * size_t(s.n) * sizeof(float)) != 0;
                }
                CHECK_MESSAGE(differing == 0, differing, " row blocks differ from the same rows of an M=",
                              m_all, " call");
            });
        }
    }
}
