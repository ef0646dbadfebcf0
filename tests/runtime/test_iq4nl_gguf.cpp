// GGUF IQ4_NL end to end: the committed test vectors (tests/fixtures/gguf/
// iq4nl_blocks*, tools/fixtures/make_gguf_iq4nl.py) dequantize and repack
// into iq4nl bit for bit against gguf-py 0.19.0's dequantizer
// (gguf_block_fixture.hpp), and an all-IQ4_NL llama-tied loads natively at
// the file's 4.5 bits per weight with logits and greedy ids within q8's
// budgets of the f32-dequantized load.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "formats/iq4nl/layout.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "staticlm/model.hpp"
#include "model/safetensors.hpp"
#include "staticlm/error.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/session.hpp"
#include "tests/runtime/gguf_block_fixture.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

namespace {

const fs::path kGguf = test::fixtures_dir() / "gguf";

}  // namespace

TEST_CASE("iq4nl: every block of the IQ4_NL test tensor dequantizes and repacks bit for bit (gguf-py 0.19.0)") {
    // The GGUF reader's dequantization (the --weights f32/q8 path) is checked on opening.
    const test::BlockFixture fx = test::open_block_fixture("iq4nl", "iq4_nl", kernels::GgmlType::iq4_nl, 64, 640);
    const GgufTensor& t = *fx.tensor;
    const int k = fx.k, n = fx.n;
    // The native repack, in two row ranges, read back row by row.
    Buffer buf(kernels::packed_bytes(WeightType::iq4nl, n, k));
    CHECK(buf.size() == size_t(t.bytes));  // 4.5 bits per weight, as the file
    kernels::pack_iq4nl_ggml(t.data, n, k, 0, 32, buf.data());
    kernels::pack_iq4nl_ggml(t.data + 32 * t.row_bytes(), n, k, 32, n, buf.data());
    test::check_unpacked({WeightType::iq4nl, n, k, buf.data(), buf.size()}, fx.want);
}

TEST_CASE("iq4nl: an IQ4_NL llama-tied loads natively at 4.5 bits per weight, within q8's budgets of f32") {
    const fs::path file = kGguf / "llama-tied.iq4_nl.gguf";
    const GgufFile f(file);
    double file_matrix_bytes = 0;
    for (const GgufTensor& t : f.tensors())
        if (t.type == kernels::GgmlType::iq4_nl) file_matrix_bytes += double(t.bytes);
    LoadOptions o;
    o.native_weights = true;
    o.threads = 2;
    o.load_tokenizer = false;
    const auto native = Model::load(file, o);
    CHECK(native->weight_type() == WeightType::iq4nl);
    const std::vector<WeightTypeUsage> usage = model_weight_usage(*native);
    REQUIRE(usage.size() == 1);
    CHECK(usage[0].type == WeightType::iq4nl);
    CHECK(usage[0].matrices == 15);  // 7 per layer and the (tied) embedding
    // Every row count is a multiple of 16: the panels hold exactly the file's bytes.
    CHECK(usage[0].bytes == file_matrix_bytes);

    o.native_weights = false;
    o.weights = WeightType::f32;
    const auto f32 = Model::load(file, o);

    const SafetensorsFile reference(test::fixtures_dir() / "llama-tied" / "reference.safetensors");
    std::vector<int> ids;
    for (int64_t id : read_i64(reference.at("input_ids"))) ids.push_back(int(id));
    const int T = int(ids.size()), V = native->config().vocab, G = 16;
    SessionOptions so;
    so.max_seq = T + G + 4;
    so.prefill_buckets = {16, 32};
    so.append_buckets = {4};
    so.all_logits = true;
    so.threads = 2;
    so.kv = KvType::f32;
    Session sn(native, so), sf(f32, so);
    std::vector<float> ln(size_t(T) * size_t(V)), lf(ln.size());
    test::Rows cn{&ln}, cf{&lf};
    sn.prefill(ids, {test::Rows::sink, &cn});
    sf.prefill(ids, {test::Rows::sink, &cf});
    // q8's budget on these random fixtures (test_golden.cpp): PEIR 8%, top-1 90%.
    double worst = 0;
    int agree = 0;
    for (int p = 0; p < T; ++p) {
        const LogitDiff d = compare_logits({ln.data() + size_t(p) * size_t(V), size_t(V)},
                                           {lf.data() + size_t(p) * size_t(V), size_t(V)});
        worst = std::max(worst, d.peir);
        agree += d.top1();
    }
    CHECK(worst <= 8e-2);
    CHECK(double(agree) / T >= 0.9);
    // Greedy: each path runs its own continuation; the native one must equal f32's.
    std::span<const float> a = sn.prefill(ids), b = sf.prefill(ids);
    int same = 0;
    for (int g = 0; g < G; ++g) {
        const int ia = int(std::max_element(a.begin(), a.end()) - a.begin());
        const int ib = int(std::max_element(b.begin(), b.end()) - b.begin());
        same += ia == ib;
        a = sn.decode(ib);  // teacher-forced by the f32 path, so one miss stays one
        b = sf.decode(ib);
    }
    MESSAGE("llama-tied IQ4_NL native vs f32: worst PEIR " << worst << ", top-1 " << agree << "/" << T
                                                           << ", greedy " << same << "/" << G);
    CHECK(same >= G - 1);
}

TEST_CASE("iq4nl: a non-finite IQ4_NL scale is refused naming the tensor and the index, native and f32") {
    const fs::path file = kGguf / "llama-tied.iq4_nl.gguf";
    std::string bytes = test::read_file(file.string());
    size_t at = std::string::npos;
    {
        const GgufFile f(file);
        const GgufTensor& t = f.tensor("blk.1.ffn_up.weight");
        at = bytes.find(std::string(reinterpret_cast<const char*>(t.data), 64));
        REQUIRE(at != std::string::npos);
        REQUIRE(bytes.find(std::string(reinterpret_cast<const char*>(t.data), 64), at + 1) == std::string::npos);
    }
    bytes[at + 3 * 18] = '\x00';  // block 3 (row 1, elements 96..127 of the flat index): d = +inf
    bytes[at + 3 * 18 + 1] = '\x7c';
    test::TempDir tmp;
    const fs::path bad = tmp.path / "bad.gguf";
    std::ofstream(bad, std::ios::binary) << bytes;
    for (const bool native : {true, false}) {
        CAPTURE(native);
        LoadOptions o;
        o.native_weights = native;
        o.weights = WeightType::f32;
        o.threads = 1;
        o.load_tokenizer = false;
        test::expect_error([&] { Model::load(bad, o); }, ErrorKind::model,
                           {"non-finite", "flat index 96 ", "blk.1.ffn_up.weight", "bad.gguf"});
    }
}
