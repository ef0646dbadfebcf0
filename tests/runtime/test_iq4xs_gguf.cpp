// GGUF IQ4_XS: the committed test vectors (tests/fixtures/gguf/iq4xs_blocks*,
// tools/fixtures/make_gguf_iq4xs.py) dequantize, and repack into iq4xs, bit
// for bit against gguf-py 0.19.0's dequantizer (gguf_block_fixture.hpp).
#include <doctest/doctest.h>

#include <vector>

#include "formats/iq4xs/layout.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "model/gguf.hpp"
#include "tests/runtime/gguf_block_fixture.hpp"

using namespace staticlm;

TEST_CASE("iq4xs: every block of the IQ4_XS test tensor dequantizes and repacks bit for bit (gguf-py 0.19.0)") {
    // The GGUF reader's dequantization (the --weights f32/q8 path) is checked on opening.
    const test::BlockFixture fx = test::open_block_fixture("iq4xs", "iq4_xs", kernels::GgmlType::iq4_xs, 20, 2048);
    const GgufTensor& t = *fx.tensor;
    const int k = fx.k, n = fx.n;
    const std::vector<float>& want = fx.want;
    // Block 8 (row 1's first) has the scales 0, 9, ..., 63: sub-block b's
    // first element is d · (9b - 32) · value, d and the index read from the file.
    const auto& b8 = reinterpret_cast<const kernels::BlockIQ4_XS*>(t.data)[8];
    for (int b = 0; b < 8; ++b) {
        CAPTURE(b);
        CHECK(kernels::iq4xs_scale(b8, b) == 9 * b);
        const float dl = kernels::f16_to_f32(b8.d) * float(9 * b - 32);
        CHECK(test::float_bits(want[size_t(k) + size_t(32 * b)]) ==
              test::float_bits(dl * float(kernels::kIq4nlValues[b8.qs[16 * b] & 15])));
    }
    // The native repack, in two row ranges (a full panel, then 4 rows), read back row by row.
    Buffer buf(kernels::packed_bytes(WeightType::iq4xs, n, k));
    // A whole panel is 2208 bytes per 256 k against the file's 16 · 136: 1.47% more.
    CHECK(kernels::packed_bytes(WeightType::iq4xs, 16, k) * 136 == size_t(16 * k / 256) * 136 * 2208 / 16);
    CHECK(double(kernels::packed_bytes(WeightType::iq4xs, 16, k)) / double(16 * t.row_bytes()) < 1.02);
    kernels::pack_iq4xs_ggml(t.data, n, k, 0, 16, buf.data());
    kernels::pack_iq4xs_ggml(t.data + 16 * t.row_bytes(), n, k, 16, n, buf.data());
    test::check_unpacked({WeightType::iq4xs, n, k, buf.data(), buf.size()}, want);
}
