// The GGUF block test vectors of the formats kept natively (tests/fixtures/
// gguf/<stem>_blocks.gguf: one tensor; <stem>_blocks_expected.safetensors:
// gguf-py 0.19.0's dequantization of its very bytes; written by
// tools/fixtures/make_gguf_<stem>.py) and the checks every format's test makes
// of them: the GGUF reader's dequantization and the repacked matrix's
// unpack_row, bit for bit. Plain functions, compiled once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "model/gguf.hpp"

namespace staticlm::test {

struct BlockFixture {
    std::unique_ptr<GgufFile> file;
    const GgufTensor* tensor = nullptr;  // in *file
    int n = 0, k = 0;                    // rows, row length
    std::vector<float> want;             // [n][k] gguf-py's values
};

// Opens <stem>_blocks.gguf and its expected values, REQUIREs that tensor
// `name` has `type` and n rows of k, and CHECKs that gguf_read_f32 (the
// --weights f32/q8 path) gives the expected values bit for bit.
BlockFixture open_block_fixture(const std::string& stem, const std::string& name, kernels::GgmlType type, int n,
                                int k);

// CHECKs that unpack_row of every row of w gives want [w.n][w.k] bit for bit.
void check_unpacked(const kernels::PackedMatrix& w, const std::vector<float>& want);

uint32_t float_bits(float f);

}  // namespace staticlm::test
