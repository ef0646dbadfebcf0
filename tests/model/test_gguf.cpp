// GGUF reader tests: metadata of every value type (nested arrays included),
// tensor infos, dequantization bit-exact against gguf-py's numpy reference on
// the committed test vectors (tests/fixtures/gguf/quant_blocks*), unsupported
// types, and the real Gemma 3 270M file when it is installed.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "formats/q4a/layout.hpp"
#include "formats/q4k/layout.hpp"
#include "formats/q5a/layout.hpp"
#include "formats/q5k/layout.hpp"
#include "formats/q6k/layout.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/parallel.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
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

TEST_CASE("gguf: Q4_1, Q5_1, Q4_K, Q5_K and Q6_K blocks repack into q4a, q5a, q4k, q5k and q6k bit for bit "
          "(gguf-py 0.19.0's dequantization)") {
    const GgufFile f(kGgufFixtures / "quant_blocks.gguf");
    const SafetensorsFile expected(kGgufFixtures / "quant_blocks_expected.safetensors");
    for (const char* name : {"q4_1", "q5_1", "q4_k", "q5_k", "q6_k"}) {
        CAPTURE(name);
        const GgufTensor& t = f.tensor(name);
        const int n = int(t.ne[1]), k = int(t.ne[0]);
        const size_t count = size_t(n) * size_t(k);
        std::vector<uint8_t> q(count), sc(count / 32), mn(count / 32);
        std::vector<int8_t> sc6(count / 16);
        std::vector<uint16_t> d(count / 256), dmin(count / 256);
        const std::string which = name;
        const WeightType type = which == "q4_k"   ? WeightType::q4k
                                : which == "q5_k" ? WeightType::q5k
                                : which == "q4_1" ? WeightType::q4a
                                : which == "q5_1" ? WeightType::q5a
                                                  : WeightType::q6k;
        Buffer buf(kernels::packed_bytes(type, n, k));
        if (type == WeightType::q4a || type == WeightType::q5a) {
            std::vector<uint16_t> dg(count / 32), mg(count / 32);
            kernels::ggml_q41_fields(t.type, t.data, int64_t(count), q.data(), dg.data(), mg.data());
            (type == WeightType::q5a ? kernels::pack_q5a_quants : kernels::pack_q4a_quants)(
                q.data(), dg.data(), mg.data(), n, k, 0, n, buf.data());
        } else if (type == WeightType::q6k) {
            kernels::ggml_q6k_fields(t.data, int64_t(count), q.data(), sc6.data(), d.data());
            kernels::pack_q6k_quants(q.data(), sc6.data(), d.data(), n, k, 0, n, buf.data());
        } else {
            const bool five = type == WeightType::q5k;
            (five ? kernels::ggml_q5k_fields : kernels::ggml_q4k_fields)(t.data, int64_t(count), q.data(), sc.data(),
                                                                         mn.data(), d.data(), dmin.data());
            (five ? kernels::pack_q5k_quants : kernels::pack_q4k_quants)(q.data(), sc.data(), mn.data(), d.data(),
                                                                         dmin.data(), n, k, 0, n, buf.data());
        }
        const kernels::PackedMatrix w{type, n, k, buf.data(), buf.size()};
        const std::vector<float> want = read_f32(expected.at(name));
        std::vector<float> row(static_cast<size_t>(k));
        size_t bad = 0;
        for (int r = 0; r < n; ++r) {
            kernels::unpack_row(w, r, 1.0f, row.data());
            for (int i = 0; i < k; ++i) bad += bits(row[size_t(i)]) != bits(want[size_t(r) * size_t(k) + size_t(i)]);
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("gguf: native loads Q4_K and Q6_K tensors into q4k and q6k bit for bit; a non-finite d is an error") {
    // A tiny llama with FFN 256 whose ffn_down (k = 256) is Q4_K in layer 0
    // and Q6_K in layer 1: random block bytes with finite d and dmin.
    TempDir tmp;
    auto build = [&](bool bad_d) {
        GgufWriter w = tiny_gguf_model("llama", 32, {"blk.0.ffn_down.weight", "blk.1.ffn_down.weight"}, -1, 256);
        std::mt19937 rng(41);
        std::uniform_int_distribution<int> byte(0, 255);
        auto blocks = [&](size_t n, size_t size, size_t d_off, bool two_halves) {
            std::string data(n * size, '\0');
            for (char& ch : data) ch = char(byte(rng));
            for (size_t b = 0; b < n; ++b) {
                const uint16_t d = kernels::f32_to_f16(0.002f * float(1 + b % 5));
                std::memcpy(data.data() + b * size + d_off, &d, 2);
                if (two_halves) std::memcpy(data.data() + b * size + d_off + 2, &d, 2);  // Q4_K's dmin
            }
            if (bad_d) {
                const uint16_t inf = 0x7c00;
                std::memcpy(data.data() + 3 * size + d_off, &inf, 2);
            }
            return data;
        };
        w.tensor("blk.0.ffn_down.weight", {256, 16}, GgufWriter::T_Q4_K, blocks(16, 144, 0, true));
        w.tensor("blk.1.ffn_down.weight", {256, 16}, GgufWriter::T_Q6_K, blocks(16, 210, 208, false));
        return write_gguf(tmp, bad_d ? "bad.gguf" : "kquants.gguf", w.bytes());
    };
    const fs::path file = build(false);
    const GgufFile f(file);
    LoadOptions o;
    o.native_weights = true;
    o.threads = 2;
    o.load_tokenizer = false;
    const auto m = Model::load(file, o);
    const std::pair<const kernels::PackedMatrix*, WeightType> mats[] = {
        {&m->weights().layers[0].down, WeightType::q4k}, {&m->weights().layers[1].down, WeightType::q6k}};
    for (int il = 0; il < 2; ++il) {
        const auto& [pm, type] = mats[il];
        CAPTURE(il);
        REQUIRE(pm->type == type);
        const std::vector<float> want = gguf_read_f32(f.tensor("blk." + std::to_string(il) + ".ffn_down.weight"));
        std::vector<float> row(static_cast<size_t>(pm->k));
        size_t bad = 0;
        for (int r = 0; r < pm->n; ++r) {
            kernels::unpack_row(*pm, r, 1.0f, row.data());
            for (int i = 0; i < pm->k; ++i) bad += bits(row[size_t(i)]) != bits(want[size_t(r) * size_t(pm->k) + size_t(i)]);
        }
        CHECK(bad == 0);
    }
    // The matmuls against the same matrices loaded as f32: within the int8
    // rounding of the activations.
    LoadOptions o32 = o;
    o32.native_weights = false;
    o32.weights = WeightType::f32;
    const auto m32 = Model::load(file, o32);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(3 * 256);
    for (float& v : x) v = normal(rng);
    for (int il = 0; il < 2; ++il) {
        CAPTURE(il);
        const kernels::PackedMatrix& wq = *mats[il].first;
        const kernels::PackedMatrix& w32 = m32->weights().layers[size_t(il)].down;
        std::vector<float> yq(3 * 16), y32(3 * 16);
        Buffer sq(std::max<size_t>(kernels::matmul_scratch_bytes(wq.type, 3, 256), 64));
        Buffer s32(std::max<size_t>(kernels::matmul_scratch_bytes(w32.type, 3, 256), 64));
        kernels::matmul(kernels::table(), wq, x.data(), 256, 3, yq.data(), 16, sq.data(), 1);
        kernels::matmul(kernels::table(), w32, x.data(), 256, 3, y32.data(), 16, s32.data(), 1);
        double num = 0, den = 0;
        for (size_t i = 0; i < yq.size(); ++i)
            num = std::max(num, double(std::fabs(yq[i] - y32[i]))), den = std::max(den, double(std::fabs(y32[i])));
        MESSAGE("native k-quant matmul against f32: max |diff| / max |y| = ", num / den);
        CHECK(num / den < 0.02);
    }
    expect_error([&] { Model::load(build(true), o); }, ErrorKind::model,
                 {"non-finite", "blk.0.ffn_down.weight", "bad.gguf"});
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

TEST_CASE("gguf twins: model facts match the safetensors configs") {
    const struct {
        const char* file;
        int layers, hidden, heads, kv_heads, head_dim, vocab;
        bool tied;
    } twins[] = {
        {"llama-tied.gguf", 2, 64, 4, 4, 16, 256, true},
        {"llama-tied.q8_0.gguf", 2, 64, 4, 4, 16, 256, true},
        {"llama-gqa-llama3.gguf", 2, 72, 4, 2, 16, 320, false},
        {"llama-mqa-3layer.gguf", 3, 80, 5, 1, 16, 384, false},
        {"gemma3-4b-like-causal.gguf", 7, 48, 4, 2, 16, 288, true},
    };
    for (const auto& t : twins) {
        INFO("twin " << t.file);
        const GgufFile f(kGgufFixtures / t.file);
        const GgufModelInfo m = read_gguf_model_info(f);
        CHECK(m.n_layers == t.layers);
        CHECK(m.hidden == t.hidden);
        CHECK(m.n_heads == t.heads);
        CHECK(m.n_kv_heads == t.kv_heads);
        CHECK(m.head_dim == t.head_dim);
        CHECK(m.vocab == t.vocab);
        CHECK(m.tied == t.tied);
        CHECK(load_gguf_tokenizer(f)->vocab_size() == t.vocab);
    }
    // Which architectures load is the families' registry (one list, no second table).
    const GgufFile g4(kGgufFixtures / "gemma4-keqv-causal.gguf");
    REQUIRE(find_gguf_family("gemma4") != nullptr);
    CHECK(find_gguf_family("gemma4")->name == "gemma4");
    CHECK(find_gguf_family("llama")->name == "llama");
    CHECK(find_gguf_family("mamba") == nullptr);
    CHECK(load_gguf_tokenizer(g4)->vocab_size() == 320);  // a "gemma4" vocabulary
}

TEST_CASE("gguf twins: every tensor equals its safetensors twin after the converter's changes") {
    // conversions.json names the source of every GGUF tensor and what the
    // converter did: "(plus_one)" Gemma 3 norms stored as 1 + w,
    // "(permuted_q)"/"(permuted_k)" Llama q/k rows interleaved per head.
    std::ifstream in(kGgufFixtures / "conversions.json");
    REQUIRE(in);
    const nlohmann::json conv = nlohmann::json::parse(in);
    int n_files = 0;
    for (auto it = conv.begin(); it != conv.end(); ++it) {
        const nlohmann::json& c = it.value();
        if (it.key().starts_with("_") || !c.value("committed", false)) continue;
        INFO("twin " << it.key());
        const GgufFile f(kGgufFixtures / (it.key() + ".gguf"));
        const SafetensorsFile st(source_dir() / c.at("source").get<std::string>() / "model.safetensors");
        const bool q8 = c.at("outtype") == "q8_0";
        const auto& kv = c.at("kv");
        const std::string arch = c.at("arch");
        const int heads = kv.at(arch + ".attention.head_count").get<int>();
        const int hidden = kv.at(arch + ".embedding_length").get<int>();
        const int head_dim = kv.contains(arch + ".attention.key_length") ? kv.at(arch + ".attention.key_length").get<int>()
                                                                         : hidden / heads;
        size_t n_tensors = 0, mismatched = 0;
        for (auto n = c.at("names").begin(); n != c.at("names").end(); ++n) {
            std::string source = n.value().get<std::string>();
            std::string change;
            if (const size_t sp = source.find(" ("); sp != std::string::npos) {
                change = source.substr(sp + 2, source.size() - sp - 3);
                source.resize(sp);
            }
            const GgufTensor& t = f.tensor(n.key());
            const std::vector<float> got = gguf_read_f32(t);
            if (source.starts_with("config.json ")) {
                // Phi-3's LongRoPE factors: the config's list, as F32.
                const std::string key = source.substr(source.rfind('.') + 1);  // short_factor / long_factor
                std::ifstream cf(source_dir() / c.at("source").get<std::string>() / "config.json");
                const nlohmann::json cfg = nlohmann::json::parse(cf);
                const std::vector<float> want = cfg.at("rope_scaling").at(key).get<std::vector<float>>();
                CHECK(got == want);
                ++n_tensors;
                continue;
            }
            const std::vector<float> hf = read_f32(st.at(source));
            REQUIRE(got.size() == hf.size());
            std::vector<float> want(hf.size());
            const int64_t k = t.ne[0];
            for (int64_t row = 0; row < int64_t(hf.size()) / k; ++row) {
                const int64_t to = change.starts_with("permuted") ? gguf_llama_qk_row(row, head_dim) : row;
                for (int64_t col = 0; col < k; ++col) {
                    const float x = hf[size_t(row * k + col)];
                    want[size_t(to * k + col)] = change == "plus_one" ? x + 1.0f : x;
                }
            }
            for (size_t i = 0; i < got.size(); ++i) {
                // Q8_0: |error| <= half a step of the block's scale d = max|x| / 127,
                // plus the f16 rounding of d (2^-11 relative) times |q| <= 127.
                const bool ok = t.type == GgmlType::q8_0 ? std::fabs(got[i] - want[i]) <= 0.563f * [&] {
                    float m = 0;
                    const size_t b = i / 32 * 32;
                    for (size_t e = b; e < b + 32; ++e) m = std::max(m, std::fabs(want[e]));
                    return m / 127.0f;
                }() + 1e-7f
                                : t.type == GgmlType::f16  // the Q8_0 outtype keeps some tensors F16
                                    ? std::fabs(got[i] - want[i]) <= std::fabs(want[i]) * 0x1p-11f + 0x1p-24f
                                    : bits(got[i]) == bits(want[i]);
                mismatched += !ok;
            }
            ++n_tensors;
        }
        CHECK(mismatched == 0);
        CHECK(n_tensors == c.at("names").size());
        const GgufTensor* q = f.find_tensor("blk.0.attn_q.weight");
        if (!q) q = &f.tensor("blk.0.attn_qkv.weight");  // Phi-3: fused
        CHECK(q8 == (q->type == GgmlType::q8_0));
        ++n_files;
    }
    CHECK(n_files == 18);  // + smollm3, 2 granite, 2 phi3 and the qwen2/phi3 Q8_0 twins
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

TEST_CASE("gguf: load probe of the real file: open, facts, tokenizer, every weight packed as q8 (2 threads)") {
    // What Model::load of a .gguf will do once the families carry GGUF names:
    // the tokenizer is built on its own thread while the weights are
    // dequantized row chunk by row chunk (in L2) and packed, in parallel.
    const char* home = std::getenv("HOME");
    const fs::path path = std::getenv("STATICLM_GEMMA3_GGUF") ? fs::path(std::getenv("STATICLM_GEMMA3_GGUF"))
                                                             : fs::path(home ? home : "/") / ".cache" / "staticlm" /
                                                                   "gemma-3-270m-q4_k_m.gguf";
    if (!fs::is_regular_file(path)) {
        MESSAGE("SKIPPED: " << path.string() << " is absent (bash tools/get_model.sh installs it)");
        return;
    }
    using clock = std::chrono::steady_clock;
    const auto ms = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const WeightType type = WeightType::q8;
    const auto t0 = clock::now();
    const GgufFile f(path);
    const GgufModelInfo info = read_gguf_model_info(f);
    const auto t1 = clock::now();
    std::unique_ptr<Tokenizer> tok;
    clock::time_point t_tok;
    std::thread tokenizer_thread([&] {
        tok = load_gguf_tokenizer(f);
        t_tok = clock::now();
    });
    struct Matrix {
        const GgufTensor* t;
        size_t offset;
    };
    struct Task {
        size_t matrix;
        int n0, n1;
    };
    std::vector<Matrix> matrices;
    std::vector<Task> tasks;
    size_t total = 0;
    for (const GgufTensor& t : f.tensors()) {
        if (t.n_dims != 2) continue;
        const int n = int(t.ne[1]), k = int(t.ne[0]);
        matrices.push_back({&t, total});
        total += (kernels::packed_bytes(type, n, k) + 63) / 64 * 64;
        const int rows = std::max(kernels::kPanelRows, (16384 / k) / kernels::kPanelRows * kernels::kPanelRows);
        for (int n0 = 0; n0 < n; n0 += rows) tasks.push_back({matrices.size() - 1, n0, std::min(n, n0 + rows)});
    }
    Buffer arena(total);
    std::atomic<size_t> non_finite{0};
    kernels::IndexQueue queue(long(tasks.size()));
    kernels::parallel(2, [&](const kernels::Team&) {
        std::vector<float> scratch;
        for (long i; queue.next(i);) {
            const Task& task = tasks[size_t(i)];
            const GgufTensor& t = *matrices[task.matrix].t;
            const int k = int(t.ne[0]), rows = task.n1 - task.n0;
            scratch.resize(size_t(rows) * size_t(k));
            gguf_dequantize_rows(t, task.n0, task.n1, scratch.data());
            size_t bad = 0;
            for (float x : scratch) bad += !std::isfinite(x);
            non_finite.fetch_add(bad, std::memory_order_relaxed);
            // Panels are contiguous: rows [n0, n1) from a panel boundary pack as
            // a matrix of their own at that panel's offset.
            std::byte* dst = arena.data() + matrices[task.matrix].offset + kernels::packed_bytes(type, task.n0, k);
            kernels::pack_weights(type, SrcType::f32, scratch.data(), rows, k, 0, rows, dst);
        }
    });
    const auto t2 = clock::now();
    tokenizer_thread.join();
    const auto t3 = clock::now();
    CHECK(non_finite.load() == 0);
    CHECK(tok->vocab_size() == info.vocab);
    MESSAGE("gemma-3-270m load probe: open + facts " << ms(t0, t1) << " ms, " << tasks.size() << " chunks of "
                                                     << matrices.size() << " matrices packed as q8 ("
                                                     << total / 1e6 << " MB) by " << ms(t0, t2)
                                                     << " ms, tokenizer ready at " << ms(t0, t_tok)
                                                     << " ms, total " << ms(t0, t3) << " ms");
}

TEST_CASE("gguf: Q4_0 and Q5_0 tensors load into q4 and q5 bit for bit (--weights q4/q5 and native)") {
    // llama-tied.q4_0.gguf, llama-tied.q5_0.gguf: llama-tied.gguf through
    // tools/quality/requant.py (gguf-py 0.19.0): Q4_0 or Q5_0 matrices, the
    // token embedding Q8_0.
    for (const auto& [file_name_, ggml, type] : {std::tuple{"llama-tied.q4_0.gguf", GgmlType::q4_0, WeightType::q4},
                                                 std::tuple{"llama-tied.q5_0.gguf", GgmlType::q5_0, WeightType::q5}})
    for (const bool native : {false, true}) {
        const char* file_name = file_name_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        const fs::path file = kGgufFixtures / file_name;
        const GgufFile f(file);
        CAPTURE(file_name);
        CAPTURE(native);
        LoadOptions o;
        o.weights = native ? WeightType::f32 : type;  // native ignores it
        o.native_weights = native;
        o.threads = 2;
        o.load_tokenizer = false;
        const auto m = Model::load(file, o);
        CHECK(m->weight_type() == type);
        const ModelWeights& w = m->weights();
        CHECK(w.embed.type == WeightType::q8);
        REQUIRE(w.layers.size() == 2);
        for (int il = 0; il < 2; ++il) {
            const std::string blk = "blk." + std::to_string(il) + ".";
            const std::pair<const char*, const PackedMatrix*> mats[] = {
                {"ffn_gate.weight", &w.layers[size_t(il)].gate}, {"ffn_up.weight", &w.layers[size_t(il)].up},
                {"ffn_down.weight", &w.layers[size_t(il)].down}, {"attn_output.weight", &w.layers[size_t(il)].o},
                {"attn_v.weight", &w.layers[size_t(il)].v}};
            for (const auto& [name_, pm] : mats) {
                const auto& name = name_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
                INFO(blk << name);
                const GgufTensor& t = f.tensor(blk + name);
                REQUIRE(t.type == ggml);
                REQUIRE(pm->type == type);
                const std::vector<float> want = gguf_read_f32(t);
                std::vector<float> row(static_cast<size_t>(pm->k));
                size_t bad = 0;
                for (int r = 0; r < pm->n; ++r) {
                    kernels::unpack_row(*pm, r, 1.0f, row.data());
                    for (int i = 0; i < pm->k; ++i) bad += bits(row[size_t(i)]) != bits(want[size_t(r) * size_t(pm->k) + size_t(i)]);
                }
                CHECK(bad == 0);
            }
        }
    }
}
