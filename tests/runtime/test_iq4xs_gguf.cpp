// GGUF IQ4_XS: the committed test vectors (tests/fixtures/gguf/iq4xs_blocks*,
// tools/fixtures/make_gguf_iq4xs.py) dequantize, and repack into iq4xs, bit
// for bit against gguf-py 0.19.0's dequantizer.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "formats/iq4xs/layout.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "model/gguf.hpp"
#include "model/safetensors.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

namespace {

const fs::path kGguf = test::fixtures_dir() / "gguf";

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

}  // namespace

TEST_CASE("iq4xs: every block of the IQ4_XS test tensor dequantizes and repacks bit for bit (gguf-py 0.19.0)") {
    const GgufFile f(kGguf / "iq4xs_blocks.gguf");
    const SafetensorsFile expected(kGguf / "iq4xs_blocks_expected.safetensors");
    const GgufTensor& t = f.tensor("iq4_xs");
    REQUIRE(t.type == kernels::GgmlType::iq4_xs);
    const int k = int(t.ne[0]), n = int(t.ne[1]);
    REQUIRE(k == 2048);
    REQUIRE(n == 20);
    const std::vector<float> want = read_f32(expected.at("iq4_xs"));
    REQUIRE(want.size() == size_t(n) * size_t(k));
    // Block 8 (row 1's first) has the scales 0, 9, ..., 63: sub-block b's
    // first element is d · (9b - 32) · value, d and the index read from the file.
    const auto& b8 = reinterpret_cast<const kernels::BlockIQ4_XS*>(t.data)[8];
    for (int b = 0; b < 8; ++b) {
        CAPTURE(b);
        CHECK(kernels::iq4xs_scale(b8, b) == 9 * b);
        const float dl = kernels::f16_to_f32(b8.d) * float(9 * b - 32);
        CHECK(bits(want[size_t(k) + size_t(32 * b)]) == bits(dl * float(kernels::kIq4nlValues[b8.qs[16 * b] & 15])));
    }
    // The GGUF reader's dequantization (the --weights f32/q8 path).
    const std::vector<float> got = gguf_read_f32(t);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += bits(got[i]) != bits(want[i]);
    CHECK(bad == 0);
    // The native repack, in two row ranges (a full panel, then 4 rows), read back row by row.
    Buffer buf(kernels::packed_bytes(WeightType::iq4xs, n, k));
    // A whole panel is 2208 bytes per 256 k against the file's 16 · 136: 1.47% more.
    CHECK(kernels::packed_bytes(WeightType::iq4xs, 16, k) * 136 == size_t(16 * k / 256) * 136 * 2208 / 16);
    CHECK(double(kernels::packed_bytes(WeightType::iq4xs, 16, k)) / double(16 * t.row_bytes()) < 1.02);
    kernels::pack_iq4xs_ggml(t.data, n, k, 0, 16, buf.data());
    kernels::pack_iq4xs_ggml(t.data + 16 * t.row_bytes(), n, k, 16, n, buf.data());
    const kernels::PackedMatrix w{WeightType::iq4xs, n, k, buf.data(), buf.size()};
    std::vector<float> row(static_cast<size_t>(k));
    bad = 0;
    for (int r = 0; r < n; ++r) {
        kernels::unpack_row(w, r, 1.0f, row.data());
        for (int i = 0; i < k; ++i) bad += bits(row[size_t(i)]) != bits(want[size_t(r) * size_t(k) + size_t(i)]);
    }
    CHECK(bad == 0);
}
