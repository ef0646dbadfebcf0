// Bad saved states (Session::load_state / load_state_file): each is an Error
// naming what differs or what is wrong, and the session it was given to is
// left exactly as it was (same pos, tokens, logits, and the same continuation).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using test::expect_error;

namespace {

using Bytes = std::vector<std::byte>;

std::shared_ptr<const Model> load(const char* name, WeightType w) {
    LoadOptions lo;
    lo.weights = w;
    lo.threads = 1;
    lo.load_tokenizer = false;
    return Model::load(test::fixtures_dir() / name, lo);
}

std::vector<int> sequence(int n, int vocab, int salt) {
    std::vector<int> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        ids[size_t(i)] = int((uint64_t(i) * 7919u + uint64_t(salt)) % uint64_t(vocab));
    return ids;
}

SessionOptions options(int max_seq = 32, KvType kv = KvType::f16, bool ring = false) {
    SessionOptions so;
    so.max_seq = max_seq;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.kv = kv;
    so.ring_sliding = ring;
    so.threads = 1;
    return so;
}

Bytes save(const Session& s) {
    Bytes b(s.state_bytes());
    s.save_state(b);
    return b;
}

// The published 64-bit FNV-1a (offset basis 14695981039346656037, prime
// 1099511628211), written here independently of the library.
uint64_t fnv1a(const Bytes& b, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ uint64_t(b[i])) * 1099511628211ull;
    return h;
}

uint32_t get32(const Bytes& b, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(b[at + size_t(i)]) << (8 * i);
    return v;
}
void put32(Bytes& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + size_t(i)] = std::byte(v >> (8 * i));
}
// Recomputes the trailing checksum after an edit, so the check behind it is reached.
Bytes signed_(Bytes b) {
    const uint64_t h = fnv1a(b, b.size() - 8);
    for (int i = 0; i < 8; ++i) b[b.size() - 8 + size_t(i)] = std::byte(h >> (8 * i));
    return b;
}

// The fingerprint of a session: what must not change when a load fails.
struct Snapshot {
    int pos;
    std::vector<int> tokens;
    std::vector<float> logits;
    Bytes state;
    explicit Snapshot(const Session& s)
        : pos(s.pos()),
          tokens(s.tokens().begin(), s.tokens().end()),
          logits(s.logits().begin(), s.logits().end()),
          state(save(s)) {}
    bool operator==(const Snapshot&) const = default;
};

}  // namespace

TEST_CASE("saved state: the FNV-1a of this test is the published one") {
    const Bytes a{std::byte('a')};
    CHECK(fnv1a(a, 1) == 0xaf63dc4c8601ec8cull);  // the FNV reference test vector for "a"
}

TEST_CASE("saved state: bad states are clear errors and leave the session as it was") {
    const auto model = load("gemma4-e2b-like-causal", WeightType::f32);
    const int V = model->config().vocab;
    const std::vector<int> ids = sequence(20, V, 1);
    Session source(model, options());
    source.prefill(std::span<const int>(ids.data(), 11));
    const Bytes good = save(source);
    const size_t pos = 11, tokens_at = 80, logits_at = tokens_at + 4 * pos,
                 layers_at = logits_at + 4 * size_t(V);

    Session target(model, options());
    target.prefill(std::span<const int>(ids.data() + 5, 7));
    const Snapshot before(target);

    struct Row {
        const char* what;
        Bytes state;
        ErrorKind kind;
        std::vector<std::string> needles;
    };
    auto edit = [&](std::function<void(Bytes&)> f) {
        Bytes b = good;
        f(b);
        return b;
    };
    Bytes altered = good;
    altered[layers_at + 100] ^= std::byte{0x01};  // a K element
    Bytes extended = good;
    extended.push_back(std::byte{0});
    std::vector<Row> rows = {
        {"empty", {}, ErrorKind::format, {"truncated", "0 bytes", "at least 88"}},
        {"header only",
         Bytes(good.begin(), good.begin() + 80),
         ErrorKind::format,
         {"truncated", "80 bytes"}},
        {"cut in the K/V",
         Bytes(good.begin(), good.begin() + ptrdiff_t(good.size() / 2)),
         ErrorKind::format,
         {"truncated", "announces"}},
        {"last byte missing",
         Bytes(good.begin(), good.end() - 1),
         ErrorKind::format,
         {"truncated"}},
        {"a byte too many", extended, ErrorKind::format, {"1 bytes after the end"}},
        {"not a state",
         edit([](Bytes& b) { b[0] = std::byte('X'); }),
         ErrorKind::format,
         {"SLMSTATE"}},
        {"format version 2",
         edit([](Bytes& b) { put32(b, 8, 2); }),
         ErrorKind::unsupported,
         {"format version 2", "reads version 1"}},
        {"header size",
         edit([](Bytes& b) { put32(b, 12, 96); }),
         ErrorKind::format,
         {"header size 96"}},
        {"payload size",
         edit([](Bytes& b) { put32(b, 72, get32(b, 72) + 8); }),
         ErrorKind::format,
         {"truncated", "announces"}},
        {"a K element altered", altered, ErrorKind::format, {"checksum mismatch", "altered"}},
        {"the checksum altered",
         edit([](Bytes& b) { b.back() ^= std::byte{0x80}; }),
         ErrorKind::format,
         {"checksum mismatch"}},
        {"an altered model identity",
         signed_(edit([](Bytes& b) { b[16] ^= std::byte{1}; })),
         ErrorKind::input,
         {"another model"}},
        // The checks behind the checksum, reached with a recomputed checksum.
        {"pos beyond max_seq",
         signed_(edit([](Bytes& b) { put32(b, 60, 33); })),
         ErrorKind::format,
         {"pos 33 exceeds max_seq 32"}},
        {"a token outside the vocabulary",
         signed_(edit([&](Bytes& b) { put32(b, tokens_at + 12, uint32_t(V)); })),
         ErrorKind::format,
         {"token " + std::to_string(V), "position 3", "vocabulary"}},
        {"a NaN logit",
         signed_(edit([&](Bytes& b) { put32(b, logits_at + 8, 0x7fc00000u); })),
         ErrorKind::format,
         {"logit 2 is not finite"}},
        {"K/V layer count",
         signed_(edit([](Bytes& b) { put32(b, 64, 4); })),
         ErrorKind::format,
         {"4 K/V layers", "the model has 3"}},
        {"a layer record out of order",
         signed_(edit([&](Bytes& b) { put32(b, layers_at, 1); })),
         ErrorKind::format,
         {"layer record for layer 1 where layer 0"}},
        {"a full layer without its first positions",
         signed_(edit([&](Bytes& b) { put32(b, layers_at + 4, 5); })),
         ErrorKind::format,
         {"layer 0 starts at position 5", "from 0"}},
    };
    for (const Row& r : rows) {
        CAPTURE(r.what);
        try {
            target.load_state(r.state);
            FAIL_CHECK("no error thrown");
        } catch (const Error& e) {
            CHECK_MESSAGE(e.kind() == r.kind,
                          "kind " << error_kind_name(e.kind()) << ": " << e.what());
            for (const std::string& n : r.needles)
                CHECK_MESSAGE(std::string(e.what()).find(n) != std::string::npos,
                              "'" << n << "' not in: " << e.what());
        }
        CHECK(Snapshot(target) == before);
    }

    // Still usable, as if nothing happened: it continues like a twin session.
    Session twin(model, options());
    twin.prefill(std::span<const int>(ids.data() + 5, 7));
    const std::span<const float> got = target.decode(3), want = twin.decode(3);
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
}

TEST_CASE(
    "saved state: a state of another model, format, weights, cache or capacity names what "
    "differs") {
    const auto model = load("gemma4-e2b-like-causal", WeightType::f32);
    const std::vector<int> ids = sequence(12, model->config().vocab, 2);
    auto state_of = [&](const std::shared_ptr<const Model>& m, const SessionOptions& so) {
        Session s(m, so);
        s.prefill(std::span<const int>(ids.data(), 9));
        return save(s);
    };
    Session target(model, options());
    target.prefill(std::span<const int>(ids.data(), 4));
    const Snapshot before(target);
    auto expect = [&](const Bytes& state, std::initializer_list<std::string> needles) {
        expect_error([&] { target.load_state(state); }, ErrorKind::input, needles);
        CHECK(Snapshot(target) == before);
    };
    // Another model: gemma4-keqv-causal (vocab 320, 4 layers vs 256, 5).
    expect(state_of(load("gemma4-keqv-causal", WeightType::f32), options()),
           {"another model", "vocab 320, 4 layers", "vocab 256, 5 layers"});
    // The same checkpoint in another weight format.
    expect(state_of(load("gemma4-e2b-like-causal", WeightType::q8), options()),
           {"another weight format", "q8 weights", "f32 weights"});
    // Same config and format, other weights: synthetic weights of the same config.
    expect(state_of(Model::synthetic(model->config(), WeightType::f32, 1, 1), options()),
           {"other weights", "another checkpoint"});
    expect(state_of(model, options(32, KvType::f32)),
           {"another KV cache type", "saved f32", "this session f16"});
    expect(state_of(model, options(32, KvType::q8)),
           {"another KV cache type", "saved q8", "this session f16"});
    expect(state_of(model, options(48)), {"another capacity", "max_seq 48", "this session 32"});
    expect(state_of(model, options(32, KvType::f16, true)),
           {"another ring option", "saved ring_sliding on"});
    // The same model loaded again is the same model.
    Session again(model, options());
    again.load_state(state_of(load("gemma4-e2b-like-causal", WeightType::f32), options()));
    CHECK(again.pos() == 9);
}

TEST_CASE("saved state files: missing, not regular, too large, truncated") {
    const auto model = load("llama-gqa-llama3", WeightType::f32);
    const std::vector<int> ids = sequence(12, model->config().vocab, 3);
    Session s(model, options());
    s.prefill(std::span<const int>(ids.data(), 6));
    const Snapshot before(s);
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / "staticlm_test_saved_state";
    std::filesystem::create_directories(dir);

    expect_error([&] { s.load_state_file(dir / "absent.slmstate"); }, ErrorKind::io,
                 {"absent.slmstate", "no such file"});
    expect_error([&] { s.load_state_file(dir); }, ErrorKind::io, {"not a regular file"});
    expect_error([&] { s.load_state_file("/dev/zero"); }, ErrorKind::io,
                 {"/dev/zero", "not a regular file"});
    {
        std::ofstream big(dir / "big.slmstate", std::ios::binary);
        big.seekp(std::streamoff(s.max_state_bytes()));
        big.put('\0');  // one byte more than the largest state
    }
    expect_error(
        [&] { s.load_state_file(dir / "big.slmstate"); }, ErrorKind::format,
        {"big.slmstate", std::to_string(s.max_state_bytes() + 1) + " bytes", "max_seq 32"});
    s.save_state_file(dir / "good.slmstate");
    std::filesystem::resize_file(dir / "good.slmstate", s.state_bytes() - 3);
    expect_error([&] { s.load_state_file(dir / "good.slmstate"); }, ErrorKind::format,
                 {"good.slmstate", "truncated"});
    expect_error([&] { s.save_state_file(dir / "no" / "such" / "dir.slmstate"); }, ErrorKind::io,
                 {"cannot create", "dir.slmstate"});
    CHECK(Snapshot(s) == before);
    std::filesystem::remove_all(dir);

    // A buffer too small for save_state.
    Bytes small(s.state_bytes() - 1);
    expect_error(
        [&] { s.save_state(small); }, ErrorKind::capacity,
        {"needs " + std::to_string(s.state_bytes()) + " bytes", std::to_string(small.size())});
}
