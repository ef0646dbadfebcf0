// GGUF reader tests: metadata of every value type (nested arrays included),
// tensor infos, dequantization bit-exact against gguf-py's numpy reference on
// the committed test vectors (tests/fixtures/gguf/quant_blocks*), unsupported
// types, and the real Gemma 3 270M file when it is installed.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "model/gguf.hpp"
#include "model/safetensors.hpp"
#include "staticlm/error.hpp"
#include "tests/model/gguf_writer.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::test;
namespace fs = std::filesystem;
using kernels::GgmlType;

namespace {

const fs::path kGgufFixtures = fixtures_dir() / "gguf";

fs::path write_gguf(const TempDir& dir, const std::string& name, const std::string& bytes) {
    const fs::path p = dir.path / name;
    write_file(p, bytes);
    return p;
}

uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

}  // namespace

TEST_CASE("gguf: every metadata value type, arrays nested, tensor infos") {
    TempDir tmp;
    GgufWriter w;
    w.kv_string("general.architecture", "llama")
        .kv_raw("u8", GgufWriter::U8, GgufWriter::pod<uint8_t>(200))
        .kv_raw("i8", GgufWriter::I8, GgufWriter::pod<int8_t>(-100))
        .kv_raw("u16", GgufWriter::U16, GgufWriter::pod<uint16_t>(60000))
        .kv_raw("i16", GgufWriter::I16, GgufWriter::pod<int16_t>(-30000))
        .kv_u32("u32", 4000000000u)
        .kv_i32("i32", -2000000000)
        .kv_u64("u64", uint64_t{1} << 40)
        .kv_raw("i64", GgufWriter::I64, GgufWriter::pod<int64_t>(-(int64_t{1} << 40)))
        .kv_f32("f32", 0.25f)
        .kv_raw("f64", GgufWriter::F64, GgufWriter::pod<double>(1e300))
        .kv_bool("bool", true)
        .kv_string("empty", "")
        .kv_strings("strings", {"a", "", "ccc"})
        .kv_f32s("floats", {1.5f, -2.0f})
        .kv_i32s("ints", {-1, 7});
    // [[1, 2], [], [[3]]] as nested arrays of U8 / arrays
    const std::string inner12 = GgufWriter::array(GgufWriter::U8, 2, "\x01\x02");
    const std::string empty_u8 = GgufWriter::array(GgufWriter::U8, 0, "");
    const std::string deep3 = GgufWriter::array(GgufWriter::ARRAY, 1, GgufWriter::array(GgufWriter::U8, 1, "\x03"));
    w.kv_raw("nested", GgufWriter::ARRAY, GgufWriter::array(GgufWriter::ARRAY, 3, inner12 + empty_u8 + deep3));
    const std::vector<float> v = {1, 2, 3, 4, 5, 6};
    w.tensor("a", {3, 2}, GgufWriter::T_F32, GgufWriter::f32_data(v));
    w.tensor("b", {2}, GgufWriter::T_F32, GgufWriter::f32_data({7, 8}));

    for (uint32_t version : {2u, 3u}) {
        w.version = version;
        const GgufFile f(write_gguf(tmp, "all.gguf", w.bytes()));
        CHECK(f.version() == version);
        CHECK(f.alignment() == 32);
        CHECK(f.kvs().size() == 17);
        CHECK(f.get_string("general.architecture") == "llama");
        CHECK(f.get_uint("u8") == 200);
        CHECK(f.get_int("i8") == -100);
        CHECK(f.get_uint("u16") == 60000);
        CHECK(f.get_int("i16") == -30000);
        CHECK(f.get_uint("u32") == 4000000000u);
        CHECK(f.get_int("i32") == -2000000000);
        CHECK(f.get_uint("u64") == uint64_t{1} << 40);
        CHECK(f.get_int("i64") == -(int64_t{1} << 40));
        CHECK(f.get_float("f32") == 0.25);
        CHECK(f.get_float("f64") == 1e300);
        CHECK(f.get_bool("bool"));
        CHECK(f.get_string("empty").empty());
        CHECK(f.get_string_array("strings") == std::vector<std::string_view>{"a", "", "ccc"});
        CHECK(f.get_f32_array("floats") == std::vector<float>{1.5f, -2.0f});
        CHECK(f.get_int_array("ints") == std::vector<int64_t>{-1, 7});
        CHECK(f.get_array_count("nested") == 3);
        CHECK(f.find("nested")->elem_type == GgufType::array);
        CHECK(f.find("missing") == nullptr);
        expect_error([&] { f.get_uint("i8"); }, ErrorKind::format, {"all.gguf", "key 'i8'", "-100 is negative"});
        expect_error([&] { f.get_uint("u32", 1000); }, ErrorKind::format, {"key 'u32'", "larger than 1000"});
        expect_error([&] { f.get_string("u32"); }, ErrorKind::format, {"key 'u32' is UINT32, expected STRING"});
        expect_error([&] { f.get_f32_array("ints"); }, ErrorKind::format,
                     {"key 'ints' is ARRAY of INT32, expected ARRAY of FLOAT32"});
        expect_error([&] { f.get_uint("general.block_count"); }, ErrorKind::model,
                     {"all.gguf", "missing key 'general.block_count'"});

        REQUIRE(f.tensors().size() == 2);
        const GgufTensor& a = f.tensor("a");
        CHECK(a.n_dims == 2);
        CHECK(a.ne[0] == 3);
        CHECK(a.ne[1] == 2);
        CHECK(a.n_rows() == 2);
        CHECK(a.numel == 6);
        CHECK(a.bytes == 24);
        CHECK(a.shape_string() == "[3, 2]");
        CHECK(reinterpret_cast<uintptr_t>(a.data) % 32 == 0);  // mmap base + aligned offsets
        CHECK(gguf_read_f32(a) == v);
        std::vector<float> row(3);
        gguf_dequantize_rows(a, 1, 2, row.data());
        CHECK(row == std::vector<float>{4, 5, 6});
        CHECK(f.tensor("b").offset == 32);
        CHECK(gguf_read_f32(f.tensor("b")) == std::vector<float>{7, 8});
        expect_error([&] { f.tensor("c"); }, ErrorKind::model, {"missing tensor 'c'"});

        const std::string summary = gguf_summary(f);
        CHECK(summary.find("version " + std::to_string(version)) != std::string::npos);
        CHECK(summary.find("\"strings\"") != std::string::npos);
        CHECK(summary.find("ARRAY of STRING [3]") != std::string::npos);
        CHECK(summary.find("tensors: 2, 8 elements, 32 bytes") != std::string::npos);
    }
}

TEST_CASE("gguf: general.alignment places the data section and is checked on offsets") {
    TempDir tmp;
    GgufWriter w;
    w.set_alignment(64);
    w.tensor("x", {4}, GgufWriter::T_F32, GgufWriter::f32_data({1, 2, 3, 4}));
    w.tensor("y", {4}, GgufWriter::T_F32, GgufWriter::f32_data({5, 6, 7, 8}));
    const GgufFile f(write_gguf(tmp, "a64.gguf", w.bytes()));
    CHECK(f.alignment() == 64);
    CHECK(f.data_offset() % 64 == 0);
    CHECK(f.tensor("y").offset == 64);
    CHECK(gguf_read_f32(f.tensor("y")) == std::vector<float>{5, 6, 7, 8});

    GgufWriter one;
    one.set_alignment(1);
    one.tensor("x", {2}, GgufWriter::T_F32, GgufWriter::f32_data({1, 2}));
    one.tensor("q", {32}, GgufWriter::T_Q8_0, GgufWriter::pod<uint16_t>(0x3c00) + std::string(32, '\x02'), 8);
    const GgufFile g(write_gguf(tmp, "a1.gguf", one.bytes()));
    CHECK(reinterpret_cast<uintptr_t>(g.tensor("q").data) % 2 == 1);  // misaligned blocks read fine
    CHECK(gguf_read_f32(g.tensor("q")) == std::vector<float>(32, 2.0f));
}

TEST_CASE("gguf: dequantization is bit-exact with gguf-py 0.19.0 on the committed test vectors") {
    const fs::path gguf_path = kGgufFixtures / "quant_blocks.gguf";
    const fs::path expected_path = kGgufFixtures / "quant_blocks_expected.safetensors";
    REQUIRE(fs::is_regular_file(gguf_path));
    const GgufFile f(gguf_path);
    const SafetensorsFile expected(expected_path);
    const std::vector<std::string> names = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1", "q5_0",
                                            "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"};
    CHECK(f.tensors().size() == names.size());
    for (const std::string& name : names) {
        INFO("tensor " << name);
        const GgufTensor& t = f.tensor(name);
        CHECK(std::string(kernels::ggml_type_name(t.type)) == [&] {
            std::string up = name;
            for (char& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
            return up;
        }());
        CHECK(t.ne[0] == 512);
        CHECK(t.ne[1] == 8);
        const std::vector<float> want = read_f32(expected.at(name));
        const std::vector<float> got = gguf_read_f32(t);
        REQUIRE(got.size() == want.size());
        size_t mismatches = 0, first = 0;
        for (size_t i = 0; i < got.size(); ++i)
            if (bits(got[i]) != bits(want[i]) && mismatches++ == 0) first = i;
        CHECK_MESSAGE(mismatches == 0, mismatches << " values differ, first at " << first << ": got "
                                                  << got[first] << ", want " << want[first]);
        // Row-range decoding equals the matching slice of the whole tensor.
        std::vector<float> rows(size_t(3 * t.ne[0]));
        gguf_dequantize_rows(t, 4, 7, rows.data());
        CHECK(std::equal(rows.begin(), rows.end(), got.begin() + 4 * t.ne[0]));
    }
}

TEST_CASE("gguf: types without a dequantizer are clear errors naming the tensor") {
    const fs::path path = kGgufFixtures / "unsupported_type.gguf";
    REQUIRE(fs::is_regular_file(path));
    const GgufFile f(path);  // the file itself is valid
    CHECK(gguf_read_f32(f.tensor("ok_f32")).size() == 64);
    expect_error([&] { gguf_read_f32(f.tensor("iq2_xxs")); }, ErrorKind::unsupported,
                 {"unsupported tensor type IQ2_XXS", "tensor 'iq2_xxs'", "unsupported_type.gguf"});
    expect_error([&] { gguf_read_f32(f.tensor("tq1_0")); }, ErrorKind::unsupported,
                 {"unsupported tensor type TQ1_0", "tensor 'tq1_0'"});
    CHECK(gguf_summary(f).find("IQ2_XXS") != std::string::npos);
}

TEST_CASE("gguf: model facts of a tiny llama and gemma3 file") {
    TempDir tmp;
    for (const std::string arch : {"llama", "gemma3"}) {
        const GgufFile f(write_gguf(tmp, arch + ".gguf", tiny_gguf_model(arch).bytes()));
        const GgufModelInfo m = read_gguf_model_info(f);
        CHECK(m.architecture == arch);
        CHECK(m.n_layers == 2);
        CHECK(m.hidden == 16);
        CHECK(m.ffn == 24);
        CHECK(m.n_heads == 4);
        CHECK(m.n_kv_heads == 2);
        CHECK(m.head_dim == 4);
        CHECK(m.vocab == 32);
        CHECK(m.tied);
        CHECK(gguf_summary(f).find("model: " + arch + ", 2 layers, hidden 16") != std::string::npos);
        auto tok = load_gguf_tokenizer(f);
        CHECK(tok->vocab_size() == 32);
        CHECK(tok->encode("abc", true) == std::vector<int>{1, 3, 4, 5});
    }
}

TEST_CASE("gguf: the real Gemma 3 270M Q4_K_M file (skipped when not installed)") {
    const char* home = std::getenv("HOME");
    fs::path path = std::getenv("STATICLM_GEMMA3_GGUF") ? fs::path(std::getenv("STATICLM_GEMMA3_GGUF"))
                                                       : fs::path(home ? home : "/") / ".cache" / "staticlm" /
                                                             "gemma-3-270m-q4_k_m.gguf";
    if (!fs::is_regular_file(path)) {
        MESSAGE("SKIPPED: " << path.string() << " is absent (bash tools/get_model.sh installs it)");
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const GgufFile f(path);
    const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(f.version() == 3);
    CHECK(f.kvs().size() == 33);
    CHECK(f.tensors().size() == 236);
    CHECK(f.data_offset() == 6525120);
    CHECK(f.get_string("general.architecture") == "gemma3");
    CHECK(f.get_uint("gemma3.block_count") == 18);
    CHECK(f.get_array_count("tokenizer.ggml.tokens") == 262144);
    const GgufModelInfo m = read_gguf_model_info(f);
    CHECK(m.n_layers == 18);
    CHECK(m.hidden == 640);
    CHECK(m.ffn == 2048);
    CHECK(m.n_heads == 4);
    CHECK(m.n_kv_heads == 1);
    CHECK(m.head_dim == 256);
    CHECK(m.vocab == 262144);
    CHECK(m.tied);
    CHECK(m.rope_theta == 1e6);
    MESSAGE(gguf_summary(f));
    const GgufTensor& emb = f.tensor("token_embd.weight");
    CHECK(emb.type == GgmlType::q8_0);
    CHECK(emb.shape_string() == "[640, 262144]");
    CHECK(emb.bytes == 178257920);
    // Every tensor decodes to finite values.
    std::vector<float> buf;
    size_t non_finite = 0;
    uint64_t elements = 0;
    const auto t1 = std::chrono::steady_clock::now();
    for (const GgufTensor& t : f.tensors()) {
        const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, t.ne[0]));
        buf.resize(size_t(chunk * t.ne[0]));
        for (int64_t r = 0; r < t.n_rows(); r += chunk) {
            const int64_t r1 = std::min(t.n_rows(), r + chunk);
            gguf_dequantize_rows(t, r, r1, buf.data());
            for (int64_t i = 0; i < (r1 - r) * t.ne[0]; ++i) non_finite += !std::isfinite(buf[size_t(i)]);
        }
        elements += t.numel;
    }
    const double deq_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    CHECK(non_finite == 0);
    MESSAGE("gemma-3-270m: open " << open_s * 1e3 << " ms, dequantize " << elements << " elements in "
                                  << deq_s * 1e3 << " ms (1 thread)");
}
