// The format table (kernels/formats/): names and numbers, sizes against the
// documented layouts, and the fused matmul (matmul_many) against separate
// matmuls on every target, bit for bit.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/format.hpp"
#include "formats/q8/layout.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "staticlm/error.hpp"
#include "targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

TEST_CASE("weight type names, numbers and traits come from one table") {
    CHECK(weight_types().size() == kNumWeightTypes);
    for (size_t i = 0; i < weight_types().size(); ++i) {
        const WeightType t = weight_types()[i];
        const std::string name = weight_type_name(t);
        CAPTURE(name);
        CHECK(size_t(t) == i);
        CHECK(parse_weight_type(weight_type_name(t)) == t);
        CHECK(weight_type_from_id(int(t)) == t);
        CHECK(&weight_type_info(t) == &format_info(t).traits);
        CHECK(weight_type_info(t).type == t);
        CHECK(weight_type_info(t).bytes_per_weight > 0);
    }
    CHECK(int(WeightType::q8) == 0);  // the C API's SLM_WEIGHTS_* numbers
    CHECK(int(WeightType::f32) == 3);
    CHECK(int(WeightType::q4) == 4);
    CHECK(parse_weight_type("q4") == WeightType::q4);
    CHECK_FALSE(parse_weight_type("q6").has_value());
    CHECK_FALSE(parse_weight_type("").has_value());
    CHECK_FALSE(parse_weight_type("Q8").has_value());
    CHECK_FALSE(weight_type_from_id(-1).has_value());
    CHECK_FALSE(weight_type_from_id(int(kNumWeightTypes)).has_value());
    CHECK(std::string(weight_type_name(WeightType(200))) == "?");
    CHECK_THROWS_AS(weight_type_info(WeightType(200)), Error);
    CHECK_THROWS_AS(packed_bytes(WeightType(200), 16, 32), Error);
    CHECK(weight_type_choices() == "q8, f16, bf16, f32, q4, q5, q4k, q6k, q5k, q4a, q5a, iq4nl, q3k, iq4xs or q2k");
    CHECK(weight_type_info(WeightType::q4a).bytes_per_weight == 0.625);  // 5 bits, as GGUF Q4_1
    CHECK(weight_type_info(WeightType::q5a).bytes_per_weight == 0.75);   // 6 bits, as GGUF Q5_1
    CHECK(weight_type_info(WeightType::q5k).bytes_per_weight == 0.703125);  // 5.625 bits
    CHECK(weight_type_info(WeightType::q6k).bytes_per_weight == 0.8203125);  // 6.5625 bits, as GGUF Q6_K
    CHECK(parse_weight_type("q4k") == WeightType::q4k);
    CHECK(weight_type_info(WeightType::q4k).bytes_per_weight == 0.578125);  // 4.625 bits
    CHECK(weight_type_info(WeightType::q4).math == WeightMath::int8);
    CHECK(weight_type_info(WeightType::q4).bytes_per_weight == 0.5625);  // 4.5 bits
    CHECK(int(WeightType::q5) == 5);
    CHECK(parse_weight_type("q5") == WeightType::q5);
    CHECK(weight_type_info(WeightType::q5).math == WeightMath::int8);
    CHECK(weight_type_info(WeightType::q5).bytes_per_weight == 0.6875);  // 5.5 bits, as GGUF Q5_0
    CHECK(weight_type_info(WeightType::q8).math == WeightMath::int8);
    CHECK(weight_type_info(WeightType::f32).exact);
    CHECK_FALSE(weight_type_info(WeightType::f16).exact);
    CHECK(weight_type_info(WeightType::q8).bytes_per_weight == 1.0625);
}

TEST_CASE("every format is panel-major: packed_bytes covers whole panels of panel_bytes") {
    for (WeightType t : weight_types()) {
        const FormatInfo& f = format_info(t);
        const std::string name = f.traits.name;
        CAPTURE(name);
        for (int k : {1, 2, 31, 32, 33, 100, 2048}) {
            CAPTURE(k);
            CHECK(padded_k(t, k) % f.k_align == 0);
            CHECK(padded_k(t, k) >= k);
            for (int n : {0, 1, 16, 17, 100}) {
                const size_t panels = size_t(n + kPanelRows - 1) / kPanelRows;
                const size_t bytes = packed_bytes(t, n, k);
                CHECK(bytes >= panels * f.panel_bytes(k));
                CHECK(bytes < panels * f.panel_bytes(k) + 64);
            }
        }
    }
    CHECK(format_info(WeightType::q8).panel_bytes(64) == 2 * sizeof(Q8Block));
    CHECK(format_info(WeightType::f32).panel_bytes(3) == 3 * 16 * 4);
    CHECK(format_info(WeightType::f16).panel_bytes(3) == 3 * 16 * 2);
    CHECK(format_info(WeightType::bf16).panel_bytes(3) == 2 * 16 * 2 * 2);
    CHECK(q8_act_row_bytes(100) == q8_act_layout(100).stride);
}

namespace {

struct Mat {
    Buffer buf;
    PackedMatrix w;
};

Mat make(WeightType t, int n, int k, std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> src(size_t(n) * size_t(k));
    for (float& v : src) v = d(rng);
    Mat m;
    const size_t bytes = packed_bytes(t, n, k);
    m.buf = Buffer(std::max<size_t>(bytes, 64));
    pack_weights(t, SrcType::f32, src.data(), n, k, 0, n, m.buf.data());
    m.w = {t, n, k, m.buf.data(), bytes};
    return m;
}

}  // namespace

TEST_CASE("matmul_many equals separate matmuls bit for bit on every target") {
    std::mt19937 rng(41);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (WeightType t : weight_types()) {
        for (int k : {1, 33, 100}) {
            // q/k/v-like widths (one narrow), gate/up-like (equal), a single panel.
            for (const std::vector<int>& ns :
                 std::vector<std::vector<int>>{{64, 17, 17}, {40, 40}, {5}, {16, 300, 1, 33}}) {
                std::vector<Mat> mats;
                for (int n : ns) mats.push_back(make(t, n, k, rng));
                for (int m : {1, 2, 7, 30}) {
                    const size_t ldx = size_t(k) + 3;
                    std::vector<float> x(size_t(m) * ldx);
                    for (float& v : x) v = d(rng);
                    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(t, m, k), 64));
                    for_each_target([&](const KernelTable& kt) {
                        for (int threads : {1, 2, 3}) {
                            const std::string name = weight_type_name(t);
                            CAPTURE(name);
                            CAPTURE(k);
                            CAPTURE(m);
                            CAPTURE(threads);
                            std::vector<std::vector<float>> sep, fused;
                            std::vector<MatmulOut> outs;
                            for (size_t i = 0; i < mats.size(); ++i) {
                                const size_t ldy = size_t(ns[i]) + 1;
                                sep.emplace_back(size_t(m) * ldy, -7.0f);
                                fused.emplace_back(size_t(m) * ldy, -7.0f);
                                matmul(kt, mats[i].w, x.data(), ldx, m, sep.back().data(), ldy,
                                       scratch.data(), threads);
                            }
                            for (size_t i = 0; i < mats.size(); ++i)
                                outs.push_back({&mats[i].w, fused[i].data(), size_t(ns[i]) + 1});
                            matmul_many(kt, outs.data(), int(outs.size()), x.data(), ldx, m,
                                        scratch.data(), threads);
                            for (size_t i = 0; i < mats.size(); ++i)
                                CHECK(std::memcmp(sep[i].data(), fused[i].data(),
                                                  sep[i].size() * sizeof(float)) == 0);
                        }
                    });
                }
            }
        }
    }
}

TEST_CASE("matmul_many refuses mixed formats, mixed k and bad counts") {
    std::mt19937 rng(43);
    Mat a = make(WeightType::q8, 16, 32, rng), b = make(WeightType::f16, 16, 32, rng),
        c = make(WeightType::q8, 16, 64, rng);
    std::vector<float> x(64), y1(16), y2(16);
    Buffer scratch(4096);
    const MatmulOut mixed_type[2] = {{&a.w, y1.data(), 16}, {&b.w, y2.data(), 16}};
    const MatmulOut mixed_k[2] = {{&a.w, y1.data(), 16}, {&c.w, y2.data(), 16}};
    CHECK_THROWS_AS(matmul_many(table(), mixed_type, 2, x.data(), 32, 1, scratch.data(), 1), Error);
    CHECK_THROWS_AS(matmul_many(table(), mixed_k, 2, x.data(), 32, 1, scratch.data(), 1), Error);
    CHECK_THROWS_AS(matmul_many(table(), mixed_k, 0, x.data(), 32, 1, scratch.data(), 1), Error);
    const MatmulOut five[5] = {mixed_k[0], mixed_k[0], mixed_k[0], mixed_k[0], mixed_k[0]};
    CHECK_THROWS_AS(matmul_many(table(), five, 5, x.data(), 32, 1, scratch.data(), 1), Error);
}

TEST_CASE("uniform_row gives the same bits on every target") {
    std::vector<float> want(1000);
    table_for(Target::generic).uniform_row(0x123456789abcdefull, 1000, 0.5f, want.data());
    for (float v : want) CHECK((v >= -0.5f && v < 0.5f));
    for_each_target([&](const KernelTable& kt) {
        std::vector<float> got(1000);
        kt.uniform_row(0x123456789abcdefull, 1000, 0.5f, got.data());
        CHECK(std::memcmp(got.data(), want.data(), 4000) == 0);
    });
}
