// The GGUF block test vectors' shared checks (gguf_block_fixture.hpp).
#include "gguf_block_fixture.hpp"

#include <doctest/doctest.h>

#include <cstring>

#include "model/safetensors.hpp"
#include "tests/support.hpp"

namespace staticlm::test {

uint32_t float_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

BlockFixture open_block_fixture(const std::string& stem, const std::string& name, kernels::GgmlType type, int n,
                                int k) {
    const std::filesystem::path dir = fixtures_dir() / "gguf";
    BlockFixture fx;
    fx.file = std::make_unique<GgufFile>(dir / (stem + "_blocks.gguf"));
    const SafetensorsFile expected(dir / (stem + "_blocks_expected.safetensors"));
    const GgufTensor& t = fx.file->tensor(name);
    fx.tensor = &t;
    REQUIRE(t.type == type);
    fx.k = int(t.ne[0]);
    fx.n = int(t.ne[1]);
    REQUIRE(fx.k == k);
    REQUIRE(fx.n == n);
    fx.want = read_f32(expected.at(name));
    REQUIRE(fx.want.size() == size_t(n) * size_t(k));
    const std::vector<float> got = gguf_read_f32(t);
    REQUIRE(got.size() == fx.want.size());
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += float_bits(got[i]) != float_bits(fx.want[i]);
    CHECK(bad == 0);
    return fx;
}

void check_unpacked(const kernels::PackedMatrix& w, const std::vector<float>& want) {
    REQUIRE(want.size() == size_t(w.n) * size_t(w.k));
    std::vector<float> row(static_cast<size_t>(w.k));
    size_t bad = 0;
    for (int r = 0; r < w.n; ++r) {
        kernels::unpack_row(w, r, 1.0f, row.data());
        for (int i = 0; i < w.k; ++i)
            bad += float_bits(row[size_t(i)]) != float_bits(want[size_t(r) * size_t(w.k) + size_t(i)]);
    }
    CHECK(bad == 0);
}

}  // namespace staticlm::test
