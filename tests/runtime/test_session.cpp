// Session semantics of RUNTIME.md on the golden fixtures and stories260K:
// split invariance, errors that leave the session unchanged, rewind.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const Model> load(const std::filesystem::path& dir, WeightType w, int act_bits = 8) {
    LoadOptions lo;
    lo.weights = w;
    lo.act_bits = act_bits;
    lo.threads = 2;
    lo.load_tokenizer = false;
    return Model::load(dir, lo);
}

// Deterministic ids of a sequence of length n.
std::vector<int> sequence(int n, int vocab, int salt) {
    std::vector<int> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = int((uint64_t(i + 1) * 2654435761u + uint64_t(salt) * 97u) % uint64_t(vocab));
    return ids;
}

using test::Rows;

// A way of splitting a sequence: prefill `prefix` tokens, then appends of the
// given sizes, then decode steps for the rest.
struct Split {
    const char* name;
    std::vector<int> prefill_buckets, append_buckets;
    int max_seq_extra;  // max_seq = T + this (0 forces the Q = 1 fallback near the end)
    int prefix;
    std::vector<int> appends;
};

std::vector<float> run_split(std::shared_ptr<const Model> model, const std::vector<int>& ids,
                             const Split& sp, KvType kv) {
    const int T = int(ids.size()), V = model->config().vocab;
    SessionOptions so;
    so.max_seq = T + sp.max_seq_extra;
    so.prefill_buckets = sp.prefill_buckets;
    so.append_buckets = sp.append_buckets;
    so.all_logits = true;
    so.threads = 2;
    so.kv = kv;
    Session s(model, so);
    std::vector<float> out(size_t(T) * size_t(V));
    Rows rows{&out};
    int p = 0;
    s.prefill(std::span<const int>(ids.data(), size_t(sp.prefix)), {Rows::sink, &rows});
    p = sp.prefix;
    for (int n : sp.appends) {
        s.append(std::span<const int>(ids.data() + p, size_t(n)), {Rows::sink, &rows});
        p += n;
    }
    for (; p < T; ++p) {
        std::span<const float> l = s.decode(ids[size_t(p)]);
        std::copy(l.begin(), l.end(), out.begin() + ptrdiff_t(p) * V);
    }
    CHECK(s.pos() == T);
    return out;
}

double worst_peir(const std::vector<float>& a, const std::vector<float>& ref, int V) {
    double worst = 0;
    for (size_t off = 0; off < ref.size(); off += size_t(V))
        worst = std::max(worst, compare_logits({a.data() + off, size_t(V)}, {ref.data() + off, size_t(V)}).peir);
    return worst;
}

// f32 caches hold the K/V exactly as computed, so only float reordering
// differs between splits (PEIR <= 1e-5). An f16 cache rounds K/V once more, and
// a value that lands within reordering noise of an f16 rounding boundary can
// go either way: one half-ulp step (5e-4 relative) in one element, so the f16
// cache is held to 1e-4. The q8 cache is held to the same: its kernels read
// it with the float path's operations (and measure PEIR 0 here), but a flip
// of one int8 step would show.
void check_split_invariance(const std::filesystem::path& dir, WeightType w, KvType kv, int T, int act_bits = 8) {
    const double budget = kv == KvType::f32 ? 1e-5 : 1e-4;
    auto model = load(dir, w, act_bits);
    const int V = model->config().vocab;
    const std::vector<int> ids = sequence(T, V, 7);
    const Split whole{"whole", {T}, {16}, 8, T, {}};
    const std::vector<float> ref = run_split(model, ids, whole, kv);
    const Split splits[] = {
        {"prefill 8, appends of 4", {8}, {4}, 8, 10, {7, 4, 9}},
        {"odd buckets, chunked", {3, 5}, {2, 7}, 8, 11, {13, 1, 6}},
        {"capacity forces Q=1", {16}, {16}, 0, 12, {T - 12 - 3}},
        {"all decode", {1}, {1}, 0, 1, {}},
    };
    for (const Split& sp : splits) {
        const double peir = worst_peir(run_split(model, ids, sp, kv), ref, V);
        MESSAGE(dir.filename().string(), " ", std::string(weight_type_name(w)), " kv ",
                std::string(kv_type_name(kv)), " [", std::string(sp.name), "] worst PEIR ", peir);
        CHECK(peir <= budget);
    }
}

}  // namespace

TEST_CASE("split invariance: any prefill/append/decode split gives the same logits") {
    for (const char* name : {"llama-gqa-llama3", "llama-mqa-3layer", "gemma4-e2b-like-causal", "gemma4-keqv-causal"})
        for (WeightType w : {WeightType::f32, WeightType::f16, WeightType::q8, WeightType::q4, WeightType::q5,
                             WeightType::q4k, WeightType::q5k, WeightType::q6k, WeightType::q4a, WeightType::q5a})
            check_split_invariance(test::fixtures_dir() / name, w, KvType::f32, 40);
    // 16-bit activations: prefill (two-plane VNNI tiles, also on AMX
    // machines) and decode (both planes per weight load) agree as well.
    for (const char* name : {"llama-gqa-llama3", "gemma4-e2b-like-causal"})
        for (WeightType w : {WeightType::q8, WeightType::q4k, WeightType::q6k})
            check_split_invariance(test::fixtures_dir() / name, w, KvType::f32, 40, 16);
    check_split_invariance(test::fixtures_dir() / "llama-tied", WeightType::f32, KvType::f16, 40);
    for (const char* name : {"llama-gqa-llama3", "gemma4-e2b-like-causal"})
        for (WeightType w : {WeightType::f32, WeightType::q8})
            check_split_invariance(test::fixtures_dir() / name, w, KvType::q8, 40);
    if (test::have_shared_data("stories260K split invariance"))
        for (WeightType w : {WeightType::f32, WeightType::f16, WeightType::q8, WeightType::q4})
            for (KvType kv : {KvType::f32, KvType::f16, KvType::q8})
                check_split_invariance(test::shared_data() / "stories260K-hf", w, kv, 48);
}

TEST_CASE("errors leave the session unchanged") {
    auto model = load(test::fixtures_dir() / "llama-gqa-llama3", WeightType::f32);
    const int V = model->config().vocab;
    const std::vector<int> ids = sequence(12, V, 3);
    SessionOptions so;
    so.max_seq = 16;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    Session s(model, so), twin(model, so);
    s.prefill(ids);
    twin.prefill(ids);

    auto expect_error = [&](ErrorKind kind, auto&& call) {
        try {
            call();
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.kind() == kind);
            MESSAGE(e.what());
        }
        CHECK(s.pos() == 12);
    };
    expect_error(ErrorKind::input, [&] { s.append(std::vector<int>{}); });
    expect_error(ErrorKind::input, [&] { s.append(std::vector<int>{1, V, 2}); });
    expect_error(ErrorKind::input, [&] { s.append(std::vector<int>{-1}); });
    expect_error(ErrorKind::input, [&] { s.decode(V + 5); });
    expect_error(ErrorKind::capacity, [&] { s.append(std::vector<int>{1, 2, 3, 4, 5}); });
    expect_error(ErrorKind::capacity, [&] { s.prefill(sequence(17, V, 1)); });
    expect_error(ErrorKind::input, [&] { s.rewind(13); });
    expect_error(ErrorKind::input, [&] { s.rewind(-1); });

    // The next step gives exactly what an untouched twin gives.
    const std::span<const float> a = s.decode(5);
    const std::vector<float> got(a.begin(), a.end());
    const std::span<const float> b = twin.decode(5);
    CHECK(std::equal(got.begin(), got.end(), b.begin()));

    // Invalid configurations are refused at creation.
    auto bad = [&](SessionOptions o) {
        try {
            Session x(model, o);
            return false;
        } catch (const Error& e) {
            MESSAGE(e.what());
            return e.kind() == ErrorKind::config;
        }
    };
    SessionOptions o = so;
    o.prefill_buckets = {};
    CHECK(bad(o));
    o = so;
    o.append_buckets = {0};
    CHECK(bad(o));
    o = so;
    o.prefill_buckets = {32};  // > max_seq
    CHECK(bad(o));
    o = so;
    o.threads = -1;
    CHECK(bad(o));
    o = so;
    o.max_seq = 0;
    CHECK(bad(o));
}

TEST_CASE("rewind then re-appending the same tokens gives the same logits") {
    for (const char* name : {"llama-tied", "gemma4-e2b-like-causal"}) {
        auto model = load(test::fixtures_dir() / name, WeightType::f32);
        const std::vector<int> ids = sequence(30, model->config().vocab, 11);
        SessionOptions so;
        so.max_seq = 40;
        so.prefill_buckets = {32};
        so.append_buckets = {8};
        Session s(model, so);
        s.prefill(std::span<const int>(ids.data(), 20));
        const std::span<const float> first = s.append(std::span<const int>(ids.data() + 20, 10));
        const std::vector<float> before(first.begin(), first.end());
        s.rewind(10);
        CHECK(s.pos() == 20);
        const std::span<const float> again = s.append(std::span<const int>(ids.data() + 20, 10));
        CHECK(std::equal(before.begin(), before.end(), again.begin()));
    }
}

TEST_CASE("model_weight_usage: matrices, weights and bytes per format (q4 keeps the vocabulary in q8)") {
    // llama-gqa-llama3: hidden 72, 2 layers of 4 heads (2 kv) of 16, ffn 136,
    // vocab 320, untied head.
    auto m = load(test::fixtures_dir() / "llama-gqa-llama3", WeightType::q4);
    const std::vector<WeightTypeUsage> u = model_weight_usage(*m);
    REQUIRE(u.size() == 2);  // format order: q8, then q4
    CHECK(u[0].type == WeightType::q8);
    CHECK(u[0].matrices == 2);
    CHECK(u[0].weights == 2.0 * 320 * 72);
    // q8: 544 bytes per 16 rows × 32 k; 72 pads to 96 k.
    CHECK(u[0].bytes == 2.0 * (320 / 16) * 3 * 544);
    CHECK(u[1].type == WeightType::q4);
    CHECK(u[1].matrices == 2 * 7);
    const double per_layer = 64.0 * 72 + 2 * 32.0 * 72 + 72.0 * 64 + 3 * 136.0 * 72;
    CHECK(u[1].weights == 2 * per_layer);
    // q4: 288 bytes per 16 rows × 32 k. q, o: 4 panels; k, v: 2; gate, up: 9
    // panels × 3 groups; o has k 64 (2 groups), down k 136 (5 groups), 5 panels.
    const double panels = (4 * 3 + 2 * 3 + 2 * 3 + 5 * 2 + 9 * 3 * 2 + 5 * 5) * 288.0;
    CHECK(u[1].bytes == 2 * panels);
    // Work: the layers' matrices per position; the untied head per logits row;
    // the embedding table is a lookup (no multiply-adds).
    CHECK(u[0].macs_per_position == 0);
    CHECK(u[0].macs_per_logits_row == 320.0 * 72);
    CHECK(u[1].macs_per_position == 2 * per_layer);
    CHECK(u[1].macs_per_logits_row == 0);
}

TEST_CASE("model_weight_usage: a tied embedding is the head's work, once per logits row") {
    // llama-tied: hidden 64, 2 layers of 4 heads (4 kv) of 16, ffn 160, vocab 256.
    auto m = load(test::fixtures_dir() / "llama-tied", WeightType::q8);
    const std::vector<WeightTypeUsage> u = model_weight_usage(*m);
    REQUIRE(u.size() == 1);
    CHECK(u[0].matrices == 1 + 2 * 7);
    CHECK(u[0].macs_per_logits_row == 256.0 * 64);
    CHECK(u[0].macs_per_position == 2 * (4 * 64.0 * 64 + 3 * 160.0 * 64));
}

TEST_CASE("matmul_uses_amx: the formats the avx512-amx target runs on AMX tiles") {
    // Independent of the kernel tables: what docs/FORMATS.md states per format.
    const bool amx = kernel_target_name() == "avx512-amx";
    if (!amx) MESSAGE("target " << kernel_target_name() << ": no format may claim AMX");
    for (const WeightType t : {WeightType::q8, WeightType::q4, WeightType::q5, WeightType::q4k, WeightType::q5k,
                               WeightType::q4a, WeightType::q5a, WeightType::iq4nl, WeightType::iq4xs}) {
        CHECK_MESSAGE(matmul_uses_amx(t, 8) == amx, weight_type_name(t));
        CHECK_MESSAGE(!matmul_uses_amx(t, 16), weight_type_name(t));  // 16-bit activations: VNNI
    }
    for (const WeightType t : {WeightType::q6k, WeightType::q3k, WeightType::q2k, WeightType::f16, WeightType::f32})
        CHECK_MESSAGE(!matmul_uses_amx(t, 8), weight_type_name(t));
}

TEST_CASE("--weights native: fused products in different formats give the f32 logits") {
    // A tiny Llama whose layer-0 q and up projections and head are stored F16
    // (values exact in it): native keeps them so, which splits the fused q/k/v
    // and gate/up calls; the f16 kernels multiply the same values in fp32, so
    // the logits must be those of the all-f32 load up to summation order.
    // (BF16 would not do: its kernel rounds the activations to bf16 too.)
    test::TempDir d;
    test::TinyLlama t;
    t.lm_head = true;
    t.build();
    std::vector<test::RawTensor> ts = t.tensors();
    for (test::RawTensor& r : ts) {
        if (r.name == "model.layers.0.self_attn.q_proj.weight" || r.name == "model.layers.0.mlp.up_proj.weight")
            r = {r.name, "F16", r.shape, test::f16_bytes(t.values.at(r.name))};
        if (r.name == "lm_head.weight") r = {r.name, "F16", r.shape, test::f16_bytes(t.values.at(r.name))};
    }
    test::write_file(d.path / "config.json", t.config_json());
    test::write_file(d.path / "model.safetensors", test::safetensors_file(ts));
    LoadOptions lo;
    lo.load_tokenizer = false;
    lo.threads = 2;
    lo.weights = WeightType::f32;
    auto f32 = Model::load(d.path, lo);
    lo.native_weights = true;
    auto native = Model::load(d.path, lo);
    CHECK(model_native_weights(*native));
    // Reports name the types in weight_types() order; a converted model its one type.
    CHECK(model_weights_label(*native) == "native (f16, f32)");
    CHECK(model_weights_label(*f32) == "f32");
    CHECK(native->weights().layers[0].q.type == WeightType::f16);
    CHECK(native->weights().layers[0].k.type == WeightType::f32);
    const std::vector<int> ids = {1, 5, 9, 3, 17, 4, 11};
    SessionOptions so;
    so.max_seq = 16;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.kv = KvType::f32;
    so.threads = 2;
    Session a(f32, so), b(native, so);
    const std::span<const float> pa = a.prefill(ids);
    const std::vector<float> la(pa.begin(), pa.end());
    const LogitDiff diff = compare_logits(b.prefill(ids), la);
    CHECK(diff.peir <= 1e-5);
    CHECK(diff.top1());
    const std::span<const float> sa = a.decode(7);
    const std::vector<float> da(sa.begin(), sa.end());
    CHECK(compare_logits(b.decode(7), da).peir <= 1e-5);
}
