// GGUF IQ4_XS: the committed test vectors (tests/fixtures/gguf/iq4xs_blocks*,
// tools/fixtures/make_gguf_iq4xs.py) dequantize bit for bit against gguf-py
// 0.19.0's dequantizer.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
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

TEST_CASE("iq4xs: every block of the IQ4_XS test tensor dequantizes bit for bit (gguf-py 0.19.0)") {
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
}
