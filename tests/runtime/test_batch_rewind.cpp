// A BatchSession slot rewinds, resets and checks its input as a Session does
// (both are one Sequence of runtime/sequence.hpp): the same reach on ring
// caches (hand-computed: Q_max + 1 after a long prefill), the same error
// texts, and after a rewind the same logits bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/error.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::vector<int> ids(int n, int vocab, int seed) {
    std::vector<int> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out[size_t(i)] = (i * 7 + seed * 13 + 1) % vocab;
    return out;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

bool same(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("batch slot: rewind reach, rewind and input errors as a Session's") {
    // Windows 6 and 4; prefill blocks of 8 and appends of 4: Q_max = 8.
    for (const char* name : {"gemma4-e2b-like-causal", "gemma4-keqv-causal"}) {
        CAPTURE(name);
        LoadOptions lo;
        lo.weights = WeightType::f32;
        lo.threads = 2;
        lo.load_tokenizer = false;
        auto model = Model::load(test::fixtures_dir() / name, lo);
        const int V = model->config().vocab;
        BatchSessionOptions bo;
        bo.slots = 2;
        bo.session.max_seq = 64;
        bo.session.prefill_buckets = {8};
        bo.session.append_buckets = {4};
        bo.session.kv = KvType::f32;
        bo.session.threads = 2;
        bo.session.ring_sliding = true;
        Session solo(model, bo.session);
        BatchSession batch(model, bo);
        const int slot = 1;
        const std::vector<int> a = ids(40, V, 1), b = ids(12, V, 2);

        CHECK(same(batch.prefill(slot, a), solo.prefill(a)));
        // A ring holds W + Q_max slots; the next step after rewinding n from
        // the high-water mark needs the W - 1 positions before, so n <= 9.
        REQUIRE(solo.max_rewind() == 9);
        const std::string want =
            "cannot rewind 10 tokens: position 40, at most 9 can be rewound (the ring caches of "
            "sliding layers hold only window + Q_max positions)";
        CHECK(error_of([&] { solo.rewind(10); }) == want);
        CHECK(error_of([&] { batch.rewind(slot, 10); }) == want);
        CHECK(error_of([&] { batch.rewind(slot, -1); }) ==
              "cannot rewind -1 tokens: position 40, at most 9 can be rewound (the ring caches of "
              "sliding layers hold only window + Q_max positions)");
        CHECK(batch.pos(slot) == 40);

        solo.rewind(9);
        batch.rewind(slot, 9);
        CHECK(batch.pos(slot) == 31);
        CHECK(same(batch.append(slot, std::span<const int>(b.data(), 6)),
                   solo.append(std::span<const int>(b.data(), 6))));
        const int rows[] = {slot};
        const int next[] = {b[6]};
        batch.decode(rows, next);
        CHECK(same(batch.logits(slot), solo.decode(b[6])));
        CHECK(batch.pos(slot) == 38);

        // Input errors: the Session's texts.
        const int bad[] = {V};
        CHECK(error_of([&] { batch.append(slot, bad); }) ==
              "invalid token id " + std::to_string(V) + " at index 0 (vocab size " + std::to_string(V) + ")");
        CHECK(error_of([&] { batch.append(slot, std::span<const int>(a.data(), 27)); }) ==
              "capacity exceeded: P=38 + T=27 > K=64 (max_seq)");
        CHECK(error_of([&] { solo.append(std::span<const int>(a.data(), 27)); }) ==
              "capacity exceeded: P=38 + T=27 > K=64 (max_seq)");
        CHECK(error_of([&] { batch.append(slot, std::span<const int>()); }) ==
              "empty input: no tokens to process");
        CHECK(batch.pos(slot) == 38);

        // reset: the whole next prefill is reachable again, as far as the ring holds it.
        batch.reset(slot);
        solo.reset();
        CHECK(batch.pos(slot) == 0);
        CHECK(same(batch.prefill(slot, std::span<const int>(b.data(), 5)),
                   solo.prefill(std::span<const int>(b.data(), 5))));
        batch.rewind(slot, 5);
        solo.rewind(5);
        CHECK(same(batch.append(slot, std::span<const int>(a.data(), 3)),
                   solo.append(std::span<const int>(a.data(), 3))));
    }
}
