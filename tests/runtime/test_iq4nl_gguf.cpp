// GGUF IQ4_NL: the committed test vectors (tests/fixtures/gguf/iq4nl_blocks*,
// tools/fixtures/make_gguf_iq4nl.py) dequantize bit for bit against gguf-py
// 0.19.0's dequantizer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/ggml_blocks.hpp"
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

TEST_CASE("IQ4_NL: every block of the test tensor dequantizes bit for bit (gguf-py 0.19.0)") {
    const GgufFile f(kGguf / "iq4nl_blocks.gguf");
    const SafetensorsFile expected(kGguf / "iq4nl_blocks_expected.safetensors");
    const GgufTensor& t = f.tensor("iq4_nl");
    REQUIRE(t.type == kernels::GgmlType::iq4_nl);
    const int k = int(t.ne[0]), n = int(t.ne[1]);
    REQUIRE(k == 640);
    REQUIRE(n == 64);
    const std::vector<float> want = read_f32(expected.at("iq4_nl"));
    REQUIRE(want.size() == size_t(n) * size_t(k));
    const std::vector<float> got = gguf_read_f32(t);
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += bits(got[i]) != bits(want[i]);
    CHECK(bad == 0);
    // Row-range decoding equals the matching slice of the whole tensor.
    std::vector<float> rows(size_t(3) * size_t(k));
    gguf_dequantize_rows(t, 5, 8, rows.data());
    CHECK(std::equal(rows.begin(), rows.end(), got.begin() + 5 * k));
}
