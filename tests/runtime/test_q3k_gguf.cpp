// GGUF Q3_K end to end: the committed test vectors (tests/fixtures/gguf/
// q3k_blocks*, tools/fixtures/make_gguf_q3k.py) dequantize, and repack into
// q3k through the format's GGUF hook, bit for bit against gguf-py 0.19.0's
// dequantizer (gguf_block_fixture.hpp), at the file's 110 bytes per 256 weights.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "formats/q3k/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "model/gguf.hpp"
#include "tests/runtime/gguf_block_fixture.hpp"

using namespace staticlm;

TEST_CASE("q3k: every block of the Q3_K test tensor dequantizes and repacks bit for bit (gguf-py 0.19.0)") {
    // The GGUF reader's dequantization (the --weights f32/q8 path) is checked on opening.
    const test::BlockFixture fx = test::open_block_fixture("q3k", "q3_k", kernels::GgmlType::q3_k, 24, 2048);
    const GgufTensor& t = *fx.tensor;
    const int k = fx.k, n = fx.n;
    // The native path as the loader runs it: the format's hook reads runs of
    // rows into its scratch (rows 0-15, then 16-23 one by one) and packs each
    // panel.
    const kernels::GgufIngest* in = kernels::gguf_ingest(WeightType::q3k, kernels::GgmlType::q3_k);
    REQUIRE(in != nullptr);
    Buffer buf(kernels::packed_bytes(WeightType::q3k, n, k));
    // 110 bytes per 256 weights, as the file; 24 rows take two 16-row panels.
    CHECK(buf.size() * 24 == size_t(t.bytes) * 32);
    std::vector<std::byte> scratch(in->scratch_bytes(16, k));
    CHECK(in->read(t.type, t.data, k, 0, 16, 16, scratch.data()) == -1);
    in->pack(scratch.data(), 16, n, k, 0, 16, buf.data());
    for (int r = 16; r < n; ++r)
        CHECK(in->read(t.type, t.data + size_t(r) * t.row_bytes(), k, r - 16, 1, 16, scratch.data()) == -1);
    in->pack(scratch.data(), 16, n, k, 16, n, buf.data());
    test::check_unpacked({WeightType::q3k, n, k, buf.data(), buf.size()}, fx.want);
    // A non-finite d (row 1's third block) is reported at the block's first element.
    std::vector<std::byte> blocks(t.data, t.data + 2 * t.row_bytes());
    const uint16_t nan = 0x7e00;
    const size_t block = size_t(k / 256) + 2;
    std::memcpy(blocks.data() + block * sizeof(kernels::BlockQ3_K) + offsetof(kernels::BlockQ3_K, d), &nan, 2);
    CHECK(in->read(t.type, blocks.data(), k, 0, 2, 16, scratch.data()) == int64_t(block) * 256);
}
