// GGUF Q2_K: the committed test vectors (tests/fixtures/gguf/q2k_blocks*,
// tools/fixtures/make_gguf_q2k.py; a 32 × 2048 tensor) dequantize, and repack
// into q2k through the loader's ingestion hook, bit for bit against gguf-py
// 0.19.0's dequantizer (gguf_block_fixture.hpp), at exactly the file's 2.625
// bits per weight; a non-finite d or dmin is reported at its block's first
// element.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "formats/q2k/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "model/gguf.hpp"
#include "tests/runtime/gguf_block_fixture.hpp"
#include "tests/support.hpp"

using namespace staticlm;

TEST_CASE("q2k: every block of the Q2_K test tensor dequantizes and repacks bit for bit (gguf-py 0.19.0)") {
    // The GGUF reader's dequantization (the --weights f32/q8 path) is checked on opening.
    const test::BlockFixture fx = test::open_block_fixture("q2k", "q2_k", kernels::GgmlType::q2_k, 32, 2048);
    const GgufTensor& t = *fx.tensor;
    const int k = fx.k, n = fx.n;
    // The native path as the loader runs it: the q2k hook reads rows into its
    // scratch (rows 0-15 at once, then 16-31 in two runs) and packs each panel.
    REQUIRE(kernels::gguf_native_type(kernels::GgmlType::q2_k) == WeightType::q2k);
    const kernels::GgufIngest* in = kernels::gguf_ingest(WeightType::q2k, kernels::GgmlType::q2_k);
    REQUIRE(in != nullptr);
    Buffer buf(kernels::packed_bytes(WeightType::q2k, n, k));
    CHECK(buf.size() == size_t(t.bytes));  // 2.625 bits per weight, as the file
    std::vector<std::byte> scratch(in->scratch_bytes(16, k));
    CHECK(in->read(t.type, t.data, k, 0, 16, 16, scratch.data()) == -1);
    in->pack(scratch.data(), 16, n, k, 0, 16, buf.data());
    CHECK(in->read(t.type, t.data + 16 * t.row_bytes(), k, 0, 5, 16, scratch.data()) == -1);
    CHECK(in->read(t.type, t.data + 21 * t.row_bytes(), k, 5, 11, 16, scratch.data()) == -1);
    in->pack(scratch.data(), 16, n, k, 16, n, buf.data());
    test::check_unpacked({WeightType::q2k, n, k, buf.data(), buf.size()}, fx.want);
    // pack_q2k_ggml straight from the file's bytes gives the same panels.
    Buffer direct(buf.size());
    kernels::pack_q2k_ggml(t.data, n, k, 0, n, direct.data());
    CHECK(std::memcmp(direct.data(), buf.data(), buf.size()) == 0);
}

TEST_CASE("q2k: a non-finite d or dmin is reported at its block's first element") {
    const GgufFile f(test::fixtures_dir() / "gguf" / "q2k_blocks.gguf");
    const GgufTensor& t = f.tensor("q2_k");
    const int k = int(t.ne[0]);
    const kernels::GgufIngest& in = *kernels::gguf_ingest(WeightType::q2k, kernels::GgmlType::q2_k);
    std::vector<std::byte> scratch(in.scratch_bytes(2, k));
    for (const size_t field : {size_t(80), size_t(82)}) {  // d, dmin
        for (const uint16_t h : {uint16_t(0x7c00), uint16_t(0xfe00)}) {  // +inf, NaN
            CAPTURE(field);
            CAPTURE(h);
            std::vector<std::byte> bytes(t.data, t.data + 2 * t.row_bytes());
            const size_t block = 8 + 3;  // row 1's fourth super-block
            std::memcpy(bytes.data() + block * 84 + field, &h, 2);
            CHECK(in.read(t.type, bytes.data(), k, 0, 2, 2, scratch.data()) == int64_t(block) * 256);
        }
    }
}
