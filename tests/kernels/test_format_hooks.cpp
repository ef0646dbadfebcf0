// The format entries' hooks (kernels/formats/format.hpp): the scalar
// reference row against every target's packing, GGUF ingestion against
// ggml's dequantizer, the vocabulary fallback and the --weights native
// choice per GGML type.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/format.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

// Heavy-tailed values with a few exact zeros: the quantizers' corner cases.
std::vector<float> sample(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(count);
    for (size_t i = 0; i < count; ++i) {
        const float v = normal(rng);
        x[i] = i % 97 == 5 ? 0.0f : v * v * v;
    }
    return x;
}

// Rows of w as floats through unpack_row.
std::vector<float> unpacked(const PackedMatrix& w) {
    std::vector<float> out(size_t(w.n) * size_t(w.k));
    for (int r = 0; r < w.n; ++r) unpack_row(w, r, 1.0f, out.data() + size_t(r) * size_t(w.k));
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("every format's packing stores what its scalar reference row gives, on every target") {
    constexpr int n = 19;  // a whole panel and 3 rows of a second
    for (WeightType t : weight_types()) {
        const FormatInfo& f = format_info(t);
        CAPTURE(std::string(f.traits.name));
        REQUIRE(bool(f.ref_row));
        for (int k : {1, 37, 300}) {
            CAPTURE(k);
            const std::vector<float> x = sample(size_t(n) * size_t(k), uint32_t(k) * 31 + uint32_t(t));
            std::vector<float> want(x.size());
            for (int r = 0; r < n; ++r) f.ref_row(x.data() + size_t(r) * size_t(k), k, want.data() + size_t(r) * size_t(k));
            const size_t panel = f.panel_bytes(k);
            for_each_target([&](const KernelTable& kt) {
                Buffer data(packed_bytes(t, n, k));
                for (int p = 0; p * kPanelRows < n; ++p)
                    kt.format(t).pack_panel(SrcType::f32, x.data() + size_t(p) * kPanelRows * size_t(k), size_t(k),
                                            std::min(kPanelRows, n - p * kPanelRows), k,
                                            data.data() + size_t(p) * panel);
                PackedMatrix w;
                w.type = t, w.n = n, w.k = k, w.data = data.data(), w.bytes = data.size();
                CHECK(same_bits(unpacked(w), want));
            });
        }
    }
}

TEST_CASE("the low-bit integer formats keep the vocabulary matrices at q8") {
    for (WeightType t : weight_types()) {
        const WeightTypeInfo& i = weight_type_info(t);
        CAPTURE(std::string(i.name));
        // Fewer bits than q8's 8.5 in int8 math: a low-bit format.
        const bool low_bit = i.math == WeightMath::int8 && i.bytes_per_weight < 1.0625;
        CHECK(vocab_weight_type(t) == (low_bit ? WeightType::q8 : t));
    }
}

TEST_CASE("--weights native: the format each GGML type loads into") {
    // docs/FORMATS.md, "--weights native".
    const std::pair<GgmlType, const char*> want[] = {
        {GgmlType::f32, "f32"},  {GgmlType::f16, "f16"},  {GgmlType::bf16, "bf16"}, {GgmlType::q8_0, "q8"},
        {GgmlType::q4_0, "q4"},  {GgmlType::q4_1, "q4a"}, {GgmlType::q5_0, "q5"},   {GgmlType::q5_1, "q5a"},
        {GgmlType::q4_k, "q4k"}, {GgmlType::q5_k, "q5k"}, {GgmlType::q6_k, "q6k"},  {GgmlType::q2_k, "q2k"},
        {GgmlType::q3_k, "q3k"}, {GgmlType::iq4_nl, "iq4nl"}, {GgmlType::iq4_xs, "iq4xs"},
    };
    for (const auto& entry : want) {
        const GgmlType g = entry.first;  // not a structured binding: CHECK's lambda captures it (clang 14)
        const char* name = entry.second;
        CAPTURE(std::string(ggml_type_name(g)));
        CHECK(std::string(weight_type_name(gguf_native_type(g))) == name);
        // A format holds the type it is native for exactly, unless it is a float (dequantized exactly).
        const WeightType t = gguf_native_type(g);
        if (weight_type_info(t).math == WeightMath::int8)
            CHECK(gguf_ingest(t, g) != nullptr);
    }
    CHECK(gguf_ingest(WeightType::q8, GgmlType::q4_0) != nullptr);  // Q4_0's quants fit int8
    CHECK(gguf_ingest(WeightType::q4, GgmlType::q8_0) == nullptr);
    CHECK(gguf_ingest(WeightType::f32, GgmlType::f32) == nullptr);  // f32 rows: the dequantizing path
}

namespace {

// Random blocks of a GGML type: random bytes with every half field a finite
// value in [1/1024, 1).
std::vector<std::byte> random_blocks(GgmlType g, int rows, int k, uint32_t seed) {
    const GgmlTypeInfo& ti = *ggml_type_info(g);
    const size_t nb = size_t(rows) * size_t(k / ti.block_elems);
    std::vector<std::byte> b(nb * size_t(ti.block_bytes));
    std::mt19937 rng(seed);
    for (std::byte& v : b) v = std::byte(rng() & 0xff);
    std::uniform_real_distribution<float> u(1.0f / 1024, 1.0f);
    auto half = [&](void* p) {
        const uint16_t h = f32_to_f16(u(rng));
        std::memcpy(p, &h, 2);
    };
    for (size_t i = 0; i < nb; ++i) {
        std::byte* p = b.data() + i * size_t(ti.block_bytes);
        switch (g) {
            case GgmlType::q4_0: half(&reinterpret_cast<BlockQ4_0*>(p)->d); break;
            case GgmlType::q5_0: half(&reinterpret_cast<BlockQ5_0*>(p)->d); break;
            case GgmlType::q8_0:  // ggml's quants are in [-127, 127] (d = max / 127)
                half(&reinterpret_cast<BlockQ8_0*>(p)->d);
                for (int8_t& q : reinterpret_cast<BlockQ8_0*>(p)->qs) q = q == -128 ? int8_t(-127) : q;
                break;
            case GgmlType::q4_1:
                half(&reinterpret_cast<BlockQ4_1*>(p)->d), half(&reinterpret_cast<BlockQ4_1*>(p)->m);
                break;
            case GgmlType::q5_1:
                half(&reinterpret_cast<BlockQ5_1*>(p)->d), half(&reinterpret_cast<BlockQ5_1*>(p)->m);
                break;
            case GgmlType::q4_k:
                half(&reinterpret_cast<BlockQ4_K*>(p)->d), half(&reinterpret_cast<BlockQ4_K*>(p)->dmin);
                break;
            case GgmlType::q5_k:
                half(&reinterpret_cast<BlockQ5_K*>(p)->d), half(&reinterpret_cast<BlockQ5_K*>(p)->dmin);
                break;
            case GgmlType::q6_k: half(&reinterpret_cast<BlockQ6_K*>(p)->d); break;
            case GgmlType::iq4_nl: half(&reinterpret_cast<BlockIQ4_NL*>(p)->d); break;
            case GgmlType::q3_k: half(&reinterpret_cast<BlockQ3_K*>(p)->d); break;
            case GgmlType::iq4_xs: half(&reinterpret_cast<BlockIQ4_XS*>(p)->d); break;  // scales: any 6 bits
            case GgmlType::q2_k:
                half(&reinterpret_cast<BlockQ2_K*>(p)->d), half(&reinterpret_cast<BlockQ2_K*>(p)->dmin);
                break;
            default: FAIL("no block generator for ", ggml_type_name(g));
        }
    }
    return b;
}

}  // namespace

TEST_CASE("GGUF ingestion repacks blocks bit for bit against ggml's dequantizer") {
    constexpr int n = 21, k = 512;
    for (WeightType t : weight_types()) {
        const FormatInfo& f = format_info(t);
        for (GgmlType g : f.gguf.takes) {
            CAPTURE(std::string(f.traits.name));
            CAPTURE(std::string(ggml_type_name(g)));
            const GgufIngest& in = *gguf_ingest(t, g);
            const std::vector<std::byte> blocks = random_blocks(g, n, k, uint32_t(g) * 7 + uint32_t(t));
            const size_t row_bytes = blocks.size() / n;
            std::vector<float> want(size_t(n) * k);
            REQUIRE(dequantize_ggml(g, blocks.data(), want.data(), int64_t(want.size())));
            // Rows 0-15 in one read, then 16-20 one row at a time (the loader's permuted path).
            Buffer data(packed_bytes(t, n, k));
            std::vector<std::byte> scratch(in.scratch_bytes(16, k));
            CHECK(in.read(g, blocks.data(), k, 0, 16, 16, scratch.data()) == -1);
            in.pack(scratch.data(), 16, n, k, 0, 16, data.data());
            for (int r = 16; r < n; ++r)
                CHECK(in.read(g, blocks.data() + size_t(r) * row_bytes, k, r - 16, 1, 16, scratch.data()) == -1);
            in.pack(scratch.data(), 16, n, k, 16, n, data.data());
            PackedMatrix w;
            w.type = t, w.n = n, w.k = k, w.data = data.data(), w.bytes = data.size();
            CHECK(same_bits(unpacked(w), want));
            // A non-finite half scale is reported at its block's first element.
            std::vector<std::byte> bad = blocks;
            const GgmlTypeInfo& ti = *ggml_type_info(g);
            const size_t block = size_t(k / ti.block_elems) + 1;  // row 1's second block
            const size_t d_at = g == GgmlType::q3_k   ? offsetof(BlockQ3_K, d)
                                : g == GgmlType::q6_k ? offsetof(BlockQ6_K, d)
                                : g == GgmlType::q5_k ? offsetof(BlockQ5_K, d)
                                : g == GgmlType::q4_k ? offsetof(BlockQ4_K, d)
                                : g == GgmlType::q2_k ? offsetof(BlockQ2_K, d)
                                                      : 0;  // the legacy blocks start with d
            const uint16_t inf = 0x7c00;
            std::memcpy(bad.data() + block * size_t(ti.block_bytes) + d_at, &inf, 2);
            CHECK(in.read(g, bad.data(), k, 0, 2, 16, scratch.data()) == int64_t(block) * ti.block_elems);
            if (g == GgmlType::q2_k) {  // and its second half scale, dmin
                bad = blocks;
                std::memcpy(bad.data() + block * size_t(ti.block_bytes) + offsetof(BlockQ2_K, dmin), &inf, 2);
                CHECK(in.read(g, bad.data(), k, 0, 2, 16, scratch.data()) == int64_t(block) * ti.block_elems);
            }
        }
    }
}
