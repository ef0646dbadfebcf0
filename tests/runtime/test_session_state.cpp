// Session::set_abort and saved state: another thread stops a 4k-token prefill
// within one layer's time (+10 ms) and the session goes on bit-identically;
// aborts keep ring caches consistent; a saved and restored session continues
// with bit-identical logits; the state holds only the positions in use.
// (Bad states: tests/robust/test_saved_state.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/model.hpp"
#include "staticlm/prefix_pool.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<const Model> load(const char* name, WeightType w) {
    LoadOptions lo;
    lo.weights = w;
    lo.threads = 2;
    lo.load_tokenizer = false;
    return Model::load(test::fixtures_dir() / name, lo);
}

std::vector<int> sequence(int n, int vocab, int salt) {
    std::vector<int> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        ids[size_t(i)] = int((uint64_t(i + 3) * 40503u + uint64_t(salt) * 131u) % uint64_t(vocab));
    return ids;
}

std::span<const int> slice(const std::vector<int>& v, int from, int to) {
    return {v.data() + from, size_t(to - from)};
}

std::vector<float> copy(std::span<const float> l) { return {l.begin(), l.end()}; }

// Bit-for-bit equality of two logit rows (memcmp: -0 vs 0 and NaN payloads count).
bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Abort callbacks: one reading a flag set by another thread, one recording
// when it is asked, one stopping at its n-th call.
bool flag_set(void* ctx) {
    return static_cast<std::atomic<bool>*>(ctx)->load(std::memory_order_relaxed);
}

struct Stamps {
    std::vector<Clock::time_point> at;  // reserved: the callback does not allocate
    static bool record(void* ctx) {
        auto& s = *static_cast<Stamps*>(ctx);
        if (s.at.size() < s.at.capacity()) s.at.push_back(Clock::now());
        return false;
    }
};

struct Countdown {
    int left = 0;
    int calls = 0;
    static bool next(void* ctx) {
        auto& c = *static_cast<Countdown*>(ctx);
        ++c.calls;
        return --c.left < 0;
    }
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Decoder shapes where one layer of a 512-token block late in a 4k sequence
// takes measurable time on two threads (tens of ms): Llama layout, 4 layers.
ModelConfig abort_config() {
    return parse_model_config(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama",
      "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 768, "vocab_size": 2048,
      "rms_norm_eps": 1e-05, "max_position_embeddings": 4096, "rope_theta": 10000.0,
      "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2
    })",
                              "abort-test");
}

}  // namespace

TEST_CASE("abort: another thread stops a 4k-token prefill within one layer's time") {
    const auto model = Model::synthetic(abort_config(), WeightType::q8, 11, 2);
    // 2k tokens in the sanitizer pass (test::kSanitized): the same blocks of
    // 512, at half the instrumented run time.
    const int L = model->config().n_layers, V = model->config().vocab, T = test::kSanitized ? 2048 : 4096;
    const std::vector<int> ids = sequence(T, V, 1);
    SessionOptions so;
    so.max_seq = T;
    so.prefill_buckets = default_prefill_buckets(T);  // blocks of 512
    so.append_buckets = default_append_buckets(T);
    so.threads = 2;

    // One layer's time, measured: the callback is asked before every layer and
    // before the head, so the longest gap between two asks is the slowest
    // layer (attention grows with the position: a layer of the last block).
    Session timed(model, so);
    Stamps stamps;
    stamps.at.reserve(size_t(T / 512) * size_t(L) + 8);
    timed.set_abort(Stamps::record, &stamps);
    const auto t_start = Clock::now();
    timed.prefill(ids);
    const double prefill_ms = ms(Clock::now() - t_start);
    REQUIRE(stamps.at.size() == size_t(T / 512) * size_t(L) + 1);  // + the head of the last block
    double layer_ms = 0;
    for (size_t i = 1; i < stamps.at.size(); ++i)
        layer_ms = std::max(layer_ms, ms(stamps.at[i] - stamps.at[i - 1]));

    // The same prefill, stopped from another thread halfway through.
    Session s(model, so);
    std::atomic<bool> stop{false};
    s.set_abort(flag_set, &stop);
    Clock::time_point asked;
    std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(prefill_ms / 2));
        asked = Clock::now();
        stop.store(true, std::memory_order_relaxed);
    });
    Clock::time_point returned;
    bool aborted = false;
    try {
        s.prefill(ids);
    } catch (const Error& e) {
        returned = Clock::now();
        aborted = e.kind() == ErrorKind::aborted;
        CHECK(std::string(e.what()).find("pos " + std::to_string(s.pos())) != std::string::npos);
    }
    aborter.join();
    REQUIRE(aborted);
    const double delay_ms = ms(returned - asked);
    MESSAGE(T, "-token prefill (", L, " layers, 2 threads): ", prefill_ms, " ms, slowest layer ",
            layer_ms, " ms; abort returned after ", delay_ms, " ms at pos ", s.pos());
    CHECK(delay_ms <= layer_ms + 10.0);
    // Whole blocks of 512 stay; the interrupted one is gone.
    const int P = s.pos();
    CHECK(P % 512 == 0);
    CHECK(P < T);
    CHECK(std::equal(s.tokens().begin(), s.tokens().end(), ids.begin()));

    // It goes on: the rest appended equals a session that prefilled the same
    // prefix and appended the rest, bit for bit.
    stop.store(false);
    const std::vector<float> went_on = copy(s.append(slice(ids, P, T)));
    Session ref(model, so);
    if (P > 0) ref.prefill(slice(ids, 0, P));
    const std::vector<float> expected =
        copy(P > 0 ? ref.append(slice(ids, P, T)) : ref.prefill(ids));
    CHECK(s.pos() == T);
    CHECK(same_bits(went_on, expected));
}

TEST_CASE("abort: between the layers of an append on ring caches, then the session goes on") {
    for (const char* name : {"gemma4-e2b-like-causal", "llama-gqa-llama3"})
        for (bool ring : {false, true}) {
            CAPTURE(name);
            CAPTURE(ring);
            const auto model = load(name, WeightType::f32);
            const int L = model->config().n_layers, V = model->config().vocab;
            const std::vector<int> ids = sequence(40, V, 3);
            SessionOptions so;
            so.max_seq = 48;
            so.prefill_buckets = {8};
            so.append_buckets = {4};
            so.ring_sliding = ring;
            so.threads = 2;
            Session s(model, so), ref(model, so);
            s.prefill(slice(ids, 0, 16));
            ref.prefill(slice(ids, 0, 16));
            // 20 tokens in blocks of 4; a block without logits asks L times
            // (before each layer): stop before the second layer of the 4th block.
            Countdown cd{3 * L + 1};
            s.set_abort(Countdown::next, &cd);
            test::expect_error([&] { s.append(slice(ids, 16, 36)); }, ErrorKind::aborted,
                               {"12 of the call's 20 tokens", "pos 28"});
            CHECK(s.pos() == 28);
            CHECK(cd.calls == 3 * L + 2);
            // The interrupted block wrote positions 28..31 in layer 0: a ring of
            // window 6 + Q_max 8 slots may now rewind 28 - 32 + 8 + 1 = 5 (RUNTIME.md).
            const bool sliding = model->config().layers[0].window > 0;
            CHECK(s.max_rewind() == (ring && sliding ? 5 : 28));
            s.set_abort(nullptr, nullptr);
            ref.append(slice(ids, 16, 28));
            CHECK(same_bits(s.append(slice(ids, 28, 36)), ref.append(slice(ids, 28, 36))));
            for (int p = 36; p < 40; ++p)
                CHECK(same_bits(s.decode(ids[size_t(p)]), ref.decode(ids[size_t(p)])));
        }
}

TEST_CASE(
    "abort: a decode step stopped at its head keeps pos; an abort before the first layer of "
    "prefill empties") {
    const auto model = load("llama-gqa-llama3", WeightType::f32);
    const int L = model->config().n_layers, V = model->config().vocab;
    const std::vector<int> ids = sequence(12, V, 4);
    SessionOptions so;
    so.max_seq = 32;
    so.prefill_buckets = default_prefill_buckets(32);
    so.append_buckets = default_append_buckets(32);
    so.threads = 1;
    Session s(model, so);
    s.prefill(slice(ids, 0, 10));
    const std::vector<float> before = copy(s.logits());
    Countdown cd{L};  // the ask before the head
    s.set_abort(Countdown::next, &cd);
    test::expect_error([&] { s.decode(ids[10]); }, ErrorKind::aborted,
                       {"0 of the call's 1 tokens", "pos 10"});
    CHECK(s.pos() == 10);
    CHECK(same_bits(s.logits(), before));  // not updated by the aborted call
    cd = Countdown{0};
    test::expect_error([&] { s.prefill(ids); }, ErrorKind::aborted, {"pos 0"});
    CHECK(s.pos() == 0);
}

TEST_CASE("abort: an aborted chat turn leaves the conversation as it was before the turn") {
    if (!test::have_shared_data("stories260K chat")) return;
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    const auto model = Model::load(test::shared_data() / "stories260K-hf", lo);
    const int L = model->config().n_layers;
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = default_prefill_buckets(256);
    so.append_buckets = default_append_buckets(256);
    so.threads = 1;
    Session s(model, so), twin(model, so);
    const Tokenizer& tok = *model_tokenizer(*model);
    Chat chat(s, tok, ChatFormat{}, {}), ref(twin, tok, ChatFormat{}, {});
    GenerateOptions go;
    go.sampling.temperature = 0.0f;
    go.max_tokens = 12;
    go.stop_ids = {-1};  // no early stop: the steps are counted
    chat.reply("Once upon a time", go);
    ref.reply("Once upon a time", go);
    const int before = s.pos();
    // The turn's block and two decode steps complete (L + 1 asks each: with
    // the head); the third decode step stops before its second layer.
    Countdown cd{3 * (L + 1) + 1};
    s.set_abort(Countdown::next, &cd);
    test::expect_error([&] { chat.reply(" The dog", go); }, ErrorKind::aborted, {"aborted"});
    CHECK(cd.calls == 3 * (L + 1) + 2);
    CHECK(s.pos() == before);
    CHECK(int(chat.cached().size()) == before);
    s.set_abort(nullptr, nullptr);
    const GenerateResult a = chat.reply(" The dog", go), b = ref.reply(" The dog", go);
    CHECK(a.tokens == b.tokens);
    CHECK(a.text == b.text);
    CHECK(same_bits(s.logits(), twin.logits()));
}

namespace {

// A session with some history: prefill, appends, a rewind, decodes.
void build_history(Session& s, const std::vector<int>& ids) {
    s.prefill(slice(ids, 0, 13));
    s.append(slice(ids, 13, 30));
    s.rewind(5);
    s.append(slice(ids, 25, 33));
    for (int p = 33; p < 37; ++p) s.decode(ids[size_t(p)]);
}

// Runs the same continuation on a and b and checks every logit row bit for bit.
void same_continuation(Session& a, Session& b, const std::vector<int>& ids, int from) {
    REQUIRE(a.pos() == b.pos());
    CHECK(same_bits(a.logits(), b.logits()));
    CHECK(std::equal(a.tokens().begin(), a.tokens().end(), b.tokens().begin(), b.tokens().end()));
    CHECK(a.max_rewind() == b.max_rewind());
    CHECK(same_bits(a.append(slice(ids, from, from + 9)), b.append(slice(ids, from, from + 9))));
    for (int p = from + 9; p < from + 14; ++p)
        CHECK(same_bits(a.decode(ids[size_t(p)]), b.decode(ids[size_t(p)])));
    const int n = std::min(a.max_rewind(), 7);
    a.rewind(n);
    b.rewind(n);
    CHECK(same_bits(a.append(slice(ids, 3, 6)), b.append(slice(ids, 3, 6))));
}

}  // namespace

TEST_CASE("saved state: a restored session continues bit for bit") {
    for (const char* name : {"gemma4-e2b-like-causal", "gemma4-keqv-causal", "qwen2-bias-swa"})
        for (KvType kv : {KvType::f16, KvType::f32, KvType::q8})
            for (bool ring : {false, true}) {
                CAPTURE(name);
                CAPTURE(kv_type_name(kv));
                CAPTURE(ring);
                const auto model = load(name, WeightType::q8);
                const std::vector<int> ids = sequence(60, model->config().vocab, 7);
                SessionOptions so;
                so.max_seq = 64;
                so.prefill_buckets = {8, 16};
                so.append_buckets = {4};
                so.kv = kv;
                so.ring_sliding = ring;
                so.threads = 2;
                Session original(model, so);
                build_history(original, ids);
                std::vector<std::byte> state(original.state_bytes());
                CHECK(original.save_state(state) == state.size());

                // Into a fresh session, and into one that holds something else
                // and has other buckets of the same Q_max (ring slots differ not).
                Session fresh(model, so);
                fresh.load_state(state);
                SessionOptions other = so;
                other.append_buckets = {2, 4};
                Session used(model, other);
                used.prefill(slice(ids, 40, 60));
                used.load_state(state);
                CHECK(used.pos() == 37);
                CHECK(same_bits(used.logits(), original.logits()));

                // Saving twice gives the same bytes (saving changes nothing).
                std::vector<std::byte> again(fresh.state_bytes());
                fresh.save_state(again);
                CHECK(again == state);
                same_continuation(original, fresh, ids, 37);
            }
}

TEST_CASE("saved state: a ring restores into a ring of another size") {
    // Q_max 16 vs 8: sliding layers keep window + 16 vs window + 8 slots. The
    // state holds positions, not slots, so either restores into the other.
    // The attention kernel splits its key tiles where a ring wraps, so the
    // logits agree within float reordering (as ring vs full storage), not bit
    // for bit; wrong K/V would be far off.
    const auto model = load("gemma4-e2b-like-causal", WeightType::f32);
    const std::vector<int> ids = sequence(60, model->config().vocab, 8);
    SessionOptions big;
    big.max_seq = 64;
    big.prefill_buckets = {16};
    big.append_buckets = {4};
    big.ring_sliding = true;
    big.threads = 1;
    SessionOptions small = big;
    small.prefill_buckets = {8};
    for (int dir = 0; dir < 2; ++dir) {
        Session a(model, dir ? small : big);
        build_history(a, ids);
        std::vector<std::byte> state(a.state_bytes());
        a.save_state(state);
        Session b(model, dir ? big : small);
        b.load_state(state);
        CHECK(b.pos() == a.pos());
        CHECK(compare_logits(b.append(slice(ids, 37, 45)), a.append(slice(ids, 37, 45))).peir <=
              1e-6);
        for (int p = 45; p < 50; ++p)
            CHECK(compare_logits(b.decode(ids[size_t(p)]), a.decode(ids[size_t(p)])).peir <= 1e-6);
    }
}

TEST_CASE("saved state: only the positions in use are saved (sizes by hand)") {
    // gemma4-e2b-like-causal: vocab 256; layers 0 (sliding, 2 KV heads x 16),
    // 1 (full, 2 x 32), 2 (sliding, 2 x 16) own K/V, 3 and 4 share them.
    // f16 K and V per position: 2 * 2 * (16 + 32 + 16) * 2 = 512 bytes.
    // State = 80 header + 8 checksum + 3 layer records * 8 + 256 logits * 4
    //       + pos * (4 token bytes + 512).
    const auto model = load("gemma4-e2b-like-causal", WeightType::f32);
    REQUIRE(model->config().vocab == 256);
    const std::vector<int> ids = sequence(40, 256, 9);
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.threads = 1;
    Session s(model, so);
    const size_t fixed = 80 + 8 + 3 * 8 + 256 * 4;
    CHECK(s.state_bytes() == fixed);
    s.prefill(slice(ids, 0, 21));
    CHECK(s.state_bytes() == fixed + 21 * 516);
    CHECK(s.max_state_bytes() == fixed + 64 * 516);
    // Rings (window 6 + Q_max 8 = 14 slots): layer 1 keeps all 21 positions,
    // layers 0 and 2 the last 14: 21 * (4 + 2*2*32*2) + 2 * 14 * (2*2*16*2).
    so.ring_sliding = true;
    Session r(model, so);
    r.prefill(slice(ids, 0, 21));
    CHECK(r.state_bytes() == fixed + 21 * (4 + 256) + 2 * 14 * 128);
    // After a rewind of 3 the ring's last writes (positions 7..20) still lie
    // beyond pos 18: positions 7..17 are kept.
    r.rewind(3);
    CHECK(r.state_bytes() == fixed + 18 * (4 + 256) + 2 * 11 * 128);
}

TEST_CASE("saved state: through a file") {
    const auto model = load("llama-gqa-llama3", WeightType::q8);
    const std::vector<int> ids = sequence(60, model->config().vocab, 10);
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = default_prefill_buckets(64);
    so.append_buckets = default_append_buckets(64);
    so.threads = 1;
    Session a(model, so);
    build_history(a, ids);
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / "staticlm_test_state.slmstate";
    a.save_state_file(file);
    CHECK(std::filesystem::file_size(file) == a.state_bytes());
    Session b(model, so);
    b.load_state_file(file);
    std::filesystem::remove(file);
    same_continuation(a, b, ids, 37);
}

TEST_CASE("saved state: positions loaded from a prefix pool save as id -1 and restore") {
    const auto model = load("llama-gqa-llama3", WeightType::f32);
    const std::vector<int> ids = sequence(30, model->config().vocab, 11);
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.threads = 1;
    Session a(model, so);
    a.prefill(slice(ids, 0, 12));
    PrefixPool pool(model, so, 32);
    const int entry = pool.add(7, 12);
    a.save_prefix(pool, entry);
    Session b(model, so);
    b.load_prefix(pool, entry, 12);
    b.append(slice(ids, 12, 16));
    REQUIRE(b.tokens().size() == 16);
    CHECK(std::all_of(b.tokens().begin(), b.tokens().begin() + 12, [](int t) { return t == -1; }));
    CHECK(std::equal(b.tokens().begin() + 12, b.tokens().end(), ids.begin() + 12));
    std::vector<std::byte> state(b.state_bytes());
    b.save_state(state);
    Session c(model, so);
    c.load_state(state);
    CHECK(std::equal(c.tokens().begin(), c.tokens().end(), b.tokens().begin(), b.tokens().end()));
    same_continuation(b, c, ids, 16);
}
