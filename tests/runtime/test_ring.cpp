// Sliding-window sessions on the Gemma 4 fixtures (windows 6 and 4): ring
// storage (window + Q_max slots per sliding layer) gives the logits of full
// storage, is smaller by the hand-computed amount, and limits rewind; splits
// whose blocks cross window and bucket boundaries keep the logits unchanged.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/session.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

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

using test::Rows;

// Prefill `prefix` tokens, then appends of the given sizes, then decode steps.
struct Split {
    const char* name;
    std::vector<int> prefill_buckets, append_buckets;
    int prefix;
    std::vector<int> appends;
};

SessionOptions options_for(const Split& sp, int max_seq, KvType kv, bool ring) {
    SessionOptions so;
    so.max_seq = max_seq;
    so.prefill_buckets = sp.prefill_buckets;
    so.append_buckets = sp.append_buckets;
    so.all_logits = true;
    so.threads = 2;
    so.kv = kv;
    so.ring_sliding = ring;
    return so;
}

struct Run {
    std::vector<float> logits;  // [T][V]
    size_t cache_bytes = 0;
};

Run run_split(const std::shared_ptr<const Model>& model, const std::vector<int>& ids,
              const Split& sp, int max_seq, KvType kv, bool ring) {
    const int T = int(ids.size()), V = model->config().vocab;
    Session s(model, options_for(sp, max_seq, kv, ring));
    Run r;
    r.logits.assign(size_t(T) * size_t(V), 0.0f);
    r.cache_bytes = s.cache_bytes();
    Rows rows{&r.logits};
    s.prefill(std::span<const int>(ids.data(), size_t(sp.prefix)), {Rows::sink, &rows});
    int p = sp.prefix;
    for (int n : sp.appends) {
        s.append(std::span<const int>(ids.data() + p, size_t(n)), {Rows::sink, &rows});
        p += n;
    }
    for (; p < T; ++p) {
        const std::span<const float> l = s.decode(ids[size_t(p)]);
        std::copy(l.begin(), l.end(), r.logits.begin() + ptrdiff_t(p) * V);
    }
    CHECK(s.pos() == T);
    return r;
}

double worst_peir(const std::vector<float>& a, const std::vector<float>& ref, int V) {
    double worst = 0;
    for (size_t off = 0; off < ref.size(); off += size_t(V))
        worst = std::max(worst, compare_logits({a.data() + off, size_t(V)}, {ref.data() + off, size_t(V)}).peir);
    return worst;
}

// The cache size computed from the config alone: every KV-owning layer keeps K
// and V of [n_kv][slots][head_dim], each rounded up to 64 bytes; slots =
// max_seq, or min(max_seq, window + q_max) for a sliding layer in a ring.
size_t expected_cache_bytes(const ModelConfig& c, int max_seq, int q_max, KvType kv, bool ring) {
    const size_t elem = kv == KvType::f16 ? 2 : 4;
    size_t total = 0;
    for (int il = 0; il < c.n_layers; ++il) {
        const LayerConfig& l = c.layers[size_t(il)];
        if (l.kv_source != il) continue;
        const int slots = ring && l.window > 0 ? std::min(max_seq, l.window + q_max) : max_seq;
        const size_t half = size_t(l.n_kv_heads) * size_t(slots) * size_t(l.head_dim) * elem;
        total += 2 * ((half + 63) / 64 * 64);
    }
    return total;
}

const char* const kFixtures[] = {"gemma4-e2b-like-causal", "gemma4-keqv-causal"};

// Splits of a 48-token sequence (8 to 12 windows) whose blocks start and end
// inside windows, with appends and decodes long after the windows filled.
std::vector<Split> window_splits(int W) {
    return {
        {"one prefill block", {48}, {16}, 48, {}},
        {"prefill 5, appends of 3 crossing windows", {5}, {3}, 5, {3, 3, 3, 3, 3, 3, 3}},
        {"prefill W+1, chunked appends", {W + 1}, {2, 7}, W + 1, {13, 1, 6, 9, 2}},
        {"prefill 2W, then decode only", {16}, {4}, 2 * W, {}},
        {"all decode", {1}, {1}, 1, {}},
        {"odd buckets straddling the window", {W - 1, W + 3}, {W - 1}, 3 * W - 1, {W + 2, 1, W - 1}},
    };
}

}  // namespace

TEST_CASE("ring storage gives the logits of full storage, in a smaller cache") {
    const int T = 48;
    for (const char* name : kFixtures)
        for (WeightType w : {WeightType::f32, WeightType::q8}) {
            auto model = load(name, w);
            const ModelConfig& c = model->config();
            int W = 0;
            for (const LayerConfig& l : c.layers) W = std::max(W, l.window);
            REQUIRE(W > 0);
            const int V = c.vocab;
            const std::vector<int> ids = sequence(T, V, 5);
            for (KvType kv : {KvType::f32, KvType::f16})
                for (const Split& sp : window_splits(W)) {
                    const int q_max = std::max(*std::max_element(sp.prefill_buckets.begin(), sp.prefill_buckets.end()),
                                               *std::max_element(sp.append_buckets.begin(), sp.append_buckets.end()));
                    const int K = T + 16;
                    const Run full = run_split(model, ids, sp, K, kv, false);
                    const Run ring = run_split(model, ids, sp, K, kv, true);
                    const double peir = worst_peir(ring.logits, full.logits, V);
                    const bool same = ring.logits == full.logits;
                    MESSAGE(std::string(name), " ", std::string(weight_type_name(w)), " kv ", std::string(kv_type_name(kv)), " [", std::string(sp.name),
                            "] ring vs full: ", same ? "bitwise equal" : "PEIR " + std::to_string(peir),
                            ", cache ", ring.cache_bytes, " vs ", full.cache_bytes, " bytes");
                    CHECK(peir <= 1e-6);
                    CHECK(full.cache_bytes == expected_cache_bytes(c, K, q_max, kv, false));
                    CHECK(ring.cache_bytes == expected_cache_bytes(c, K, q_max, kv, true));
                    if (W + q_max < K) CHECK(ring.cache_bytes < full.cache_bytes);
                }
        }
}

TEST_CASE("ring storage: per-token cost counts only full-attention layers") {
    auto model = load("gemma4-e2b-like-causal", WeightType::f32);
    const ModelConfig& c = model->config();
    // Layers 0 (sliding, 2 KV heads × 16) and 1 (full, 2 × 32) and 2 (sliding)
    // own K/V; 3 and 4 share. f16: full storage costs 2·2·(16+32+16)·2 = 512
    // bytes a token; with rings only layer 1 grows: 2·2·32·2 = 256.
    REQUIRE(c.layers[1].window == 0);
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = {16};
    so.append_buckets = {8};
    Session full(model, so);
    CHECK(full.cache_bytes_per_token() == 512);
    so.ring_sliding = true;
    Session ring(model, so);
    CHECK(ring.cache_bytes_per_token() == 256);
    // 256 positions × 256 bytes for layer 1, plus 2 rings of (6 + 16) slots × 2 heads
    // × 16 dims × 2 bytes × K and V = 1408 bytes each (already 64-byte multiples).
    CHECK(ring.cache_bytes() == 256 * 256 + 2 * 2 * 1408);
    CHECK(full.cache_bytes() == 256 * 512);
}

TEST_CASE("ring storage: rewind within the ring's reach, a clear error beyond it") {
    for (const char* name : kFixtures) {
        auto model = load(name, WeightType::f32);
        const ModelConfig& c = model->config();
        int W = 0;
        for (const LayerConfig& l : c.layers) W = std::max(W, l.window);
        const int V = c.vocab;
        const std::vector<int> ids = sequence(60, V, 9);
        const std::vector<int> other = sequence(60, V, 10);
        SessionOptions so;
        so.max_seq = 64;
        so.prefill_buckets = {8};
        so.append_buckets = {4};
        so.kv = KvType::f32;
        Session full(model, so);
        so.ring_sliding = true;
        Session ring(model, so);
        const int q_max = 8;

        auto same = [&](std::span<const float> a, std::span<const float> b) {
            return worst_peir(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()), V) <= 1e-6;
        };
        // Fill several windows, then rewind as far as the ring allows.
        CHECK(same(ring.prefill(std::span<const int>(ids.data(), 40)),
                   full.prefill(std::span<const int>(ids.data(), 40))));
        CHECK(full.max_rewind() == 40);
        // Slots = W + q_max; after rewinding n from the high-water mark the next
        // step needs the W - 1 positions before pos - n, so n <= q_max + 1.
        CHECK(ring.max_rewind() == q_max + 1);
        ring.rewind(q_max + 1);
        full.rewind(q_max + 1);
        CHECK(ring.pos() == 40 - q_max - 1);
        // Different tokens after the rewind point, chunked, then decodes.
        for (int p = ring.pos(); p < 44; p += 3) {
            const int n = std::min(3, 44 - p);
            CHECK(same(ring.append(std::span<const int>(other.data() + p, size_t(n))),
                       full.append(std::span<const int>(other.data() + p, size_t(n)))));
        }
        for (int p = 44; p < 50; ++p) CHECK(same(ring.decode(ids[size_t(p)]), full.decode(ids[size_t(p)])));

        // A short rewind and the same tokens again: the same logits as before.
        const std::vector<float> before(ring.logits().begin(), ring.logits().end());
        ring.rewind(3);
        for (int p = 47; p < 50; ++p) ring.decode(ids[size_t(p)]);
        CHECK(std::equal(before.begin(), before.end(), ring.logits().begin()));

        // Beyond the reach: a clear error naming the limit, nothing changed.
        const int limit = ring.max_rewind();
        CHECK(limit == q_max + 1);
        try {
            ring.rewind(limit + 1);
            FAIL("rewind beyond the ring did not throw");
        } catch (const Error& e) {
            MESSAGE(e.what());
            CHECK(e.kind() == ErrorKind::input);
            CHECK(std::string(e.what()).find("at most " + std::to_string(limit)) != std::string::npos);
        }
        CHECK(ring.pos() == 50);
        CHECK(same(ring.decode(ids[50]), full.decode(ids[50])));

        // reset and a new prefill start a fresh history: the whole new prefix
        // written since position 0 is reachable again as far as the ring holds it.
        ring.reset();
        CHECK(ring.pos() == 0);
        ring.prefill(std::span<const int>(other.data(), 10));
        full.prefill(std::span<const int>(other.data(), 10));
        CHECK(ring.max_rewind() == std::min(10, q_max + 1));
        ring.rewind(ring.max_rewind());
        full.rewind(std::min(10, q_max + 1));
        CHECK(same(ring.append(std::span<const int>(ids.data(), 4)), full.append(std::span<const int>(ids.data(), 4))));
        (void)W;
    }
}

TEST_CASE("ring storage no larger than max_seq is full storage (rewind unlimited)") {
    auto model = load("gemma4-keqv-causal", WeightType::f32);  // window 4
    SessionOptions so;
    so.max_seq = 10;  // < window + q_max = 12: nothing to save
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    Session full(model, so);
    so.ring_sliding = true;
    Session ring(model, so);
    CHECK(ring.cache_bytes() == full.cache_bytes());
    CHECK(ring.cache_bytes_per_token() == full.cache_bytes_per_token());
    const std::vector<int> ids = sequence(10, model->config().vocab, 2);
    ring.prefill(ids);
    CHECK(ring.max_rewind() == 10);
    ring.rewind(10);
    CHECK(ring.pos() == 0);
}

TEST_CASE("split invariance with sliding windows crossing bucket boundaries") {
    // f32 cache: only float reordering differs between splits (RUNTIME.md).
    const int T = 48;
    for (const char* name : kFixtures)
        for (WeightType w : {WeightType::f32, WeightType::f16, WeightType::q8}) {
            auto model = load(name, w);
            int W = 0;
            for (const LayerConfig& l : model->config().layers) W = std::max(W, l.window);
            const int V = model->config().vocab;
            const std::vector<int> ids = sequence(T, V, 13);
            const std::vector<Split> splits = window_splits(W);
            const Run ref = run_split(model, ids, splits[0], T, KvType::f32, false);
            for (bool ring : {false, true})
                for (size_t i = 1; i < splits.size(); ++i) {
                    // max_seq = T: the last steps must shrink to fit the capacity.
                    const double peir = worst_peir(run_split(model, ids, splits[i], T, KvType::f32, ring).logits,
                                                   ref.logits, V);
                    MESSAGE(std::string(name), " ", std::string(weight_type_name(w)), std::string(ring ? " ring" : " full"), " [", std::string(splits[i].name),
                            "] worst PEIR ", peir);
                    CHECK(peir <= 1e-5);
                }
        }
}

TEST_CASE("sliding_window 2^31-1 with ring storage: full storage, no overflow (issue 18)") {
    // window + q_max once wrapped a signed int: UBSan aborted, and a plain
    // build asked for a 16-exabyte arena and failed with "out of memory".
    test::TempDir d;
    const std::filesystem::path src = test::fixtures_dir() / "gemma4-keqv-causal";
    for (const char* f : {"config.json", "model.safetensors"}) std::filesystem::copy_file(src / f, d.path / f);
    std::ifstream in(d.path / "config.json");
    nlohmann::json j = nlohmann::json::parse(in);
    in.close();
    j["sliding_window"] = 2147483647;
    test::write_file(d.path / "config.json", j.dump());
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 2;
    lo.load_tokenizer = false;
    const auto model = Model::load(d.path, lo);
    SessionOptions so;
    so.max_seq = 24;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.threads = 2;
    Session full(model, so);
    so.ring_sliding = true;
    Session ring(model, so);
    CHECK(ring.cache_bytes() == full.cache_bytes());
    const std::vector<int> ids = sequence(20, model->config().vocab, 5);
    const std::span<const float> a = full.prefill(ids);
    const std::vector<float> want(a.begin(), a.end());
    const std::span<const float> b = ring.prefill(ids);
    CHECK(std::equal(want.begin(), want.end(), b.begin(), b.end()));
    CHECK(ring.max_rewind() == 20);
}
