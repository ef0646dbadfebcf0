// safetensors reader: valid single/sharded files and every malformed case,
// each asserting the ErrorKind and that the message names the file/tensor.
#include <doctest/doctest.h>


#include "model/safetensors.hpp"
#include "staticlm/error.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::test;

namespace {

// Runs f, expects Error of `kind` whose message contains every needle.
std::filesystem::path write_st(const TempDir& d, const std::string& bytes, const std::string& name = "bad.safetensors") {
    const auto p = d.path / name;
    write_file(p, bytes);
    return p;
}

}  // namespace

TEST_CASE("safetensors: valid file with F32, BF16, F16, I64 and metadata") {
    TempDir d;
    const std::vector<float> a = {1.5f, -2.0f, 0.25f, 3.0f, 4.0f, -5.5f};
    const std::vector<float> b = {0.5f, -1.0f};
    const std::vector<int64_t> ids = {1, 42, -7, 1LL << 40};
    const auto p = write_st(d, safetensors_file({{"a", "F32", {2, 3}, f32_bytes(a)},
                                                 {"b", "BF16", {2}, bf16_bytes(b)},
                                                 {"c", "F16", {2}, f16_bytes(b)},
                                                 {"input_ids", "I64", {4}, i64_bytes(ids)},
                                                 {"empty", "F32", {0, 5}, ""}}),
                            "ok.safetensors");
    SafetensorsFile f(p);
    CHECK(f.tensors().size() == 5);
    const TensorView& ta = f.at("a");
    CHECK(ta.dtype == DType::f32);
    CHECK(ta.shape == std::vector<int64_t>{2, 3});
    CHECK(ta.numel == 6);
    CHECK(ta.bytes == 24);
    CHECK(weight_src_type(ta) == SrcType::f32);
    CHECK(read_f32(ta) == a);
    CHECK(read_f32(f.at("b")) == b);
    CHECK(weight_src_type(f.at("b")) == SrcType::bf16);
    CHECK(read_f32(f.at("c")) == b);
    CHECK(read_i64(f.at("input_ids")) == ids);
    CHECK(f.at("empty").numel == 0);
    CHECK(f.find("__metadata__") == nullptr);
    CHECK(f.find("nope") == nullptr);
    expect_error([&] { f.at("nope"); }, ErrorKind::model, {"nope", p.string()});
    // I64 is not a weight type.
    expect_error([&] { weight_src_type(f.at("input_ids")); }, ErrorKind::unsupported, {"input_ids", "I64", p.string()});
    expect_error([&] { read_i64(ta); }, ErrorKind::unsupported, {"'a'"});
}

TEST_CASE("safetensors: truncated and bad header length") {
    TempDir d;
    auto p = write_st(d, std::string("\x10\x00\x00", 3));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "truncated"});
    p = write_st(d, "");
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string()});
    // Header length past the end.
    std::string good = safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})}});
    std::string bad = good;
    const uint64_t huge = good.size();  // 8 + header + data > size - 8
    std::memcpy(bad.data(), &huge, 8);
    p = write_st(d, bad);
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "header length"});
    const uint64_t max = ~uint64_t{0};
    std::memcpy(bad.data(), &max, 8);
    p = write_st(d, bad);
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "header length"});
    // Data cut short: the tensor's range is outside the data section.
    p = write_st(d, good.substr(0, good.size() - 3));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'a'", "outside"});
}

TEST_CASE("safetensors: invalid or non-object JSON header") {
    TempDir d;
    auto p = write_st(d, safetensors_file("{\"a\": {", ""));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "JSON"});
    p = write_st(d, safetensors_file("[1, 2]", ""));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "object"});
    p = write_st(d, safetensors_file("{\"a\": 3}", ""));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'a'"});
    p = write_st(d, safetensors_file(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", "abcd"));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'a'", "dtype"});
    p = write_st(d, safetensors_file(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "abcd"));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'a'"});
    p = write_st(d, safetensors_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "abcd"));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'a'", "data_offsets"});
}

TEST_CASE("safetensors: offsets outside the data section, overlapping, reversed") {
    TempDir d;
    const std::string data(16, '\0');
    auto p = write_st(d, safetensors_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'", "outside"});
    p = write_st(d, safetensors_file(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'"});
    p = write_st(d, safetensors_file(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                        "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                                     data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'x'", "'y'", "overlap"});
    // Adjacent ranges and an empty tensor at a shared offset are fine.
    p = write_st(d, safetensors_file(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                        "z": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
                                        "y": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                                     data));
    SafetensorsFile f(p);
    CHECK(f.tensors().size() == 3);
}

TEST_CASE("safetensors: shape x dtype size mismatch and overflow") {
    TempDir d;
    const std::string data(16, '\0');
    auto p = write_st(d, safetensors_file(R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 16]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'", "[2, 3]", "12 bytes", "16"});
    p = write_st(d, safetensors_file(
                        R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 8], "data_offsets": [0, 16]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'", "overflow"});
    p = write_st(d, safetensors_file(
                        R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 16]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'", "overflow"});
}

TEST_CASE("safetensors: unknown dtype is a format error, listed ones are rejected when used") {
    TempDir d;
    auto p = write_st(d, safetensors_file(R"({"w": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 4]}})", "abcd"));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format, {p.string(), "'w'", "Q4"});
    p = write_st(d, safetensors_file({{"w", "I8", {4}, "abcd"}, {"e", "F8_E4M3", {4}, "abcd"}}));
    SafetensorsFile f(p);
    expect_error([&] { weight_src_type(f.at("w")); }, ErrorKind::unsupported, {"'w'", "I8", p.string()});
    expect_error([&] { read_f32(f.at("e")); }, ErrorKind::unsupported, {"'e'", "F8_E4M3"});
}

TEST_CASE("safetensors: missing file and directory without weights") {
    TempDir d;
    expect_error([&] { SafetensorsFile f(d.path / "none.safetensors"); }, ErrorKind::io, {"none.safetensors"});
    expect_error([&] { SafetensorsFile f(d.path); }, ErrorKind::io, {d.path.string()});
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::io, {d.path.string(), "model.safetensors"});
}

TEST_CASE("safetensors: sharded checkpoint through the index") {
    TempDir d;
    write_file(d.path / "s1.safetensors", safetensors_file({{"a", "F32", {2}, f32_bytes({1, 2})},
                                                            {"extra", "F32", {1}, f32_bytes({9})}}));
    write_file(d.path / "s2.safetensors", safetensors_file({{"b", "F16", {3}, f16_bytes({3, 4, 5})}}));
    write_file(d.path / "model.safetensors.index.json",
               R"({"metadata": {"total_size": 20}, "weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
    {
        SafetensorsSet s(d.path);
        CHECK(s.n_tensors() == 2);
        REQUIRE(s.find("a"));
        REQUIRE(s.find("b"));
        CHECK(read_f32(*s.find("a")) == std::vector<float>{1, 2});
        CHECK(read_f32(*s.find("b")) == std::vector<float>{3, 4, 5});
        CHECK(s.find("b")->file->filename() == "s2.safetensors");
        CHECK(s.find("extra") == nullptr);  // not in the weight_map
    }
    write_file(d.path / "model.safetensors.index.json", R"({"weight_map": {"a": "s2.safetensors"}})");
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::format, {"model.safetensors.index.json", "'a'", "s2.safetensors"});
    write_file(d.path / "model.safetensors.index.json", R"({"weight_map": {"a": "../s1.safetensors"}})");
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::format, {"model.safetensors.index.json", "'a'"});
    write_file(d.path / "model.safetensors.index.json", R"({"weight_map": {"a": "gone.safetensors"}})");
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::io, {"gone.safetensors"});
    write_file(d.path / "model.safetensors.index.json", R"({"weight_map": [}})");
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::format, {"model.safetensors.index.json"});
    write_file(d.path / "model.safetensors.index.json", R"({"metadata": {}})");
    expect_error([&] { SafetensorsSet s(d.path); }, ErrorKind::format, {"model.safetensors.index.json", "weight_map"});
}

TEST_CASE("safetensors: header order does not matter, the ranges must tile the data section") {
    namespace fs = std::filesystem;
    TempDir d;
    const fs::path p = d.path / "m.safetensors";
    // Listed b before a, with b's bytes after a's: accepted (the reference sorts by offset).
    const std::string data = f32_bytes({1, 2}) + f32_bytes({3});
    write_file(p, safetensors_file(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
                                   R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                   data));
    {
        SafetensorsFile f(p);
        CHECK(read_f32(f.at("a")) == std::vector<float>{1, 2});
        CHECK(read_f32(f.at("b")) == std::vector<float>{3});
        // Partial reads at any offset, and a read outside the tensor is refused.
        float x = 0;
        read_tensor_bytes(f.at("a"), 4, 4, &x);
        CHECK(x == 2.0f);
        expect_error([&] { read_tensor_bytes(f.at("a"), 4, 8, &x); }, ErrorKind::input,
                     {"'a'", "outside"});
    }
    // Zero-sized tensors may sit anywhere in the tiling.
    write_file(p, safetensors_file(R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
                                   R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                   data));
    CHECK(SafetensorsFile(p).tensors().size() == 3);
    // A gap at the start, between tensors, and bytes after the last one.
    write_file(p, safetensors_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   data.substr(0, 8)));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format,
                 {"'a'", "gap of 4 bytes at the start"});
    write_file(p, safetensors_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                   data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format,
                 {"'b'", "gap of 4 bytes after tensor 'a'"});
    write_file(p,
               safetensors_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data));
    expect_error([&] { SafetensorsFile f(p); }, ErrorKind::format,
                 {"4 bytes after the last tensor 'a'"});
    // Truncated after it was opened: reads are errors naming the file and tensor.
    write_file(
        p, safetensors_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", data));
    SafetensorsFile f(p);
    fs::resize_file(p, fs::file_size(p) - 6);
    expect_error([&] { read_f32(f.at("a")); }, ErrorKind::io,
                 {p.string(), "truncated while loading", "tensor 'a'"});
}
