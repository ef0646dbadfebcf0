// Static memory: after a session is created, prefill / append / decode /
// rewind, sampling, an abort callback and saving / restoring state into a
// buffer perform no heap allocation. This binary replaces the
// global operator new and malloc family to count calls while a flag is set.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/model.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocs{0};
inline void note() {
    if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t n) {
    note();
    return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
    note();
    return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
    note();
    return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
int posix_memalign(void** out, size_t align, size_t n) {
    note();
    void* p = __libc_memalign(align, n);
    if (!p) return 12;  // ENOMEM
    *out = p;
    return 0;
}
void* aligned_alloc(size_t align, size_t n) {
    note();
    return __libc_memalign(align, n);
}
}

void* operator new(size_t n) {
    note();
    if (void* p = __libc_malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
    note();
    if (void* p = __libc_memalign(size_t(a), n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }

using namespace staticlm;

namespace {

struct Counting {
    Counting() {
        g_allocs = 0;
        g_counting = true;
    }
    ~Counting() { g_counting = false; }
    long count() const { return g_allocs.load(); }
};

void check_no_allocation(const std::filesystem::path& dir, WeightType w, int act_bits = 8,
                         KvType kv = KvType::f16) {
    LoadOptions lo;
    lo.weights = w;
    lo.act_bits = act_bits;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(dir, lo);
    const int V = model->config().vocab;
    std::vector<int> ids(40);
    for (int i = 0; i < 40; ++i) ids[size_t(i)] = (i * 37 + 5) % V;
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {8, 16};
    so.append_buckets = {4};
    so.threads = 2;
    so.kv = kv;
    Session s(model, so);
    SamplingOptions sampling;
    sampling.temperature = 0.7f;
    sampling.top_k = 20;
    sampling.top_p = 0.9f;
    sampling.min_p = 0.01f;
    sampling.repetition_penalty = 1.1f;
    Sampler sampler(V, sampling);
    // Warm-up: the first parallel region starts the thread team.
    s.prefill(std::span<const int>(ids.data(), 20));
    s.decode(3);
    // An abort callback that never fires is asked between layers; saving into
    // a buffer sized beforehand and restoring from it are allocation-free too.
    s.set_abort([](void*) { return false; }, nullptr);
    std::vector<std::byte> state(s.max_state_bytes());
    long n = 0;
    {
        Counting c;
        s.prefill(std::span<const int>(ids.data(), 20));            // chunked: 16 + 4
        s.append(std::span<const int>(ids.data() + 20, 10));       // 4 + 4 + 2
        int tok = ids[30];
        for (int i = 0; i < 5; ++i) {
            std::span<const float> l = s.decode(tok);
            tok = sampler.sample(l, std::span<const int>(ids.data(), 30));
        }
        s.rewind(6);
        s.append(std::span<const int>(ids.data() + 30, 3));
        s.reset();
        s.prefill(std::span<const int>(ids.data(), 5));
        const size_t bytes = s.save_state(state);
        s.load_state(std::span<const std::byte>(state.data(), bytes));
        n = c.count();
    }
    CHECK_MESSAGE(n == 0, dir.filename().string(), " ", weight_type_name(w), " kv ", kv_type_name(kv), ": ", n,
                  " heap allocations");
}

}  // namespace

// generate() with logprobs: the result's logprob vectors are reserved before
// the decode loop, so they add a constant number of allocations whatever the
// number of tokens.
TEST_CASE("generate(): logprobs allocate nothing per token") {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(test::fixtures_dir() / "llama-gqa-llama3", lo);
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {8, 16};
    so.threads = 2;
    Session s(model, so);
    const std::vector<int> prompt = {5, 42, 7, 99};
    auto allocs = [&](int logprobs, int n) {
        GenerateOptions o;
        o.max_tokens = n;
        o.stop_ids = {-1};
        o.logprobs = logprobs;
        o.sampling.temperature = 0.7f;
        s.reset();
        Counting c;
        const GenerateResult r = generate(s, nullptr, prompt, o);
        CHECK(r.tokens.size() == size_t(n));
        return c.count();
    };
    allocs(5, 4);  // warm-up
    for (int lp : {0, 5, 20}) {
        const long extra_short = allocs(lp, 4) - allocs(-1, 4), extra_long = allocs(lp, 24) - allocs(-1, 24);
        CHECK_MESSAGE(extra_short == extra_long, "logprobs ", lp, ": ", extra_short, " vs ", extra_long);
        CHECK(extra_long <= 2);
    }
}

// generate() with speculation: the draft, its verification append with
// per-row logits, the acceptance rule and the rewinds allocate nothing per
// step (everything is sized before the loop). A prompt that repeats gives
// drafts to verify; the long run must verify some.
TEST_CASE("generate(): speculative decoding allocates nothing per token") {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(test::fixtures_dir() / "llama-gqa-llama3", lo);
    SessionOptions so;
    so.max_seq = 128;
    so.prefill_buckets = {8, 16};
    so.append_buckets = {4, 16};
    so.threads = 2;
    so.all_logits = true;
    Session s(model, so);
    const std::vector<int> prompt = {5, 42, 7, 99, 5, 42, 7, 99, 5, 42, 7};
    for (float temperature : {0.0f, 0.9f}) {
        auto run = [&](int n, GenerateStats* stats) {
            GenerateOptions o;
            o.max_tokens = n;
            o.stop_ids = {-1};
            o.sampling.temperature = temperature;
            o.speculation.max_draft = 6;
            s.reset();
            Counting c;
            const GenerateResult r = generate(s, nullptr, prompt, o);
            const long count = c.count();
            CHECK(r.tokens.size() == size_t(n));
            if (stats) *stats = r.stats;
            return count;
        };
        run(4, nullptr);  // warm-up
        GenerateStats stats;
        const long short_run = run(4, nullptr), long_run = run(96, &stats);
        CHECK_MESSAGE(short_run == long_run, "temperature ", temperature, ": ", short_run, " vs ", long_run);
        CHECK(stats.draft_steps > 3);
    }
}

TEST_CASE("prefill, append, decode, rewind and sampling allocate nothing") {
    for (WeightType w : {WeightType::f32, WeightType::q8, WeightType::q4, WeightType::q5, WeightType::q4k, WeightType::q5k,
                          WeightType::q6k, WeightType::q4a, WeightType::q5a}) {
        check_no_allocation(test::fixtures_dir() / "llama-gqa-llama3", w);
        check_no_allocation(test::fixtures_dir() / "gemma4-e2b-like-causal", w);
    }
    check_no_allocation(test::fixtures_dir() / "llama-gqa-llama3", WeightType::q8, 16);
    check_no_allocation(test::fixtures_dir() / "gemma4-e2b-like-causal", WeightType::q4k, 16);
    // The q8 KV cache: store() quantizes in place, attention reads it in registers.
    check_no_allocation(test::fixtures_dir() / "llama-gqa-llama3", WeightType::q8, 8, KvType::q8);
    check_no_allocation(test::fixtures_dir() / "gemma4-e2b-like-causal", WeightType::q8, 8, KvType::q8);
}

namespace {

// The batched runtime: BatchSession prefill steps and M-row decode steps, and
// BatchGenerator's submit / step / stop / release cycles (continuous batching
// with sampling) allocate nothing once created.
void check_batch_no_allocation(const std::filesystem::path& dir, WeightType w) {
    LoadOptions lo;
    lo.weights = w;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(dir, lo);
    const int V = model->config().vocab;
    std::vector<int> ids(40);
    for (int i = 0; i < 40; ++i) ids[size_t(i)] = (i * 37 + 5) % V;
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session.max_seq = 64;
    bo.session.prefill_buckets = {8, 16};
    bo.session.append_buckets = {4};
    bo.session.threads = 2;
    BatchGenerator gen(model, bo, 8);
    SamplingOptions sampling;
    sampling.temperature = 0.7f;
    sampling.top_k = 20;
    sampling.top_p = 0.9f;
    sampling.repetition_penalty = 1.1f;
    const std::vector<int> stop = {V - 1};
    auto cycle = [&] {
        for (int r = 0; r < 5; ++r) {
            while (gen.active() < gen.capacity())
                gen.submit(uint64_t(r), std::span<const int>(ids.data() + r, size_t(3 + 7 * r % 20)),
                           sampling, 4 + r, stop, r % 3 == 0 ? -1 : 4 * r);  // logprobs too
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s) {
                if (gen.in_use(s) && !gen.finished(s) && gen.generated(s).size() == 2)
                    gen.stop(s, StopReason::stop_string);
                if (gen.finished(s)) gen.release(s);
            }
        }
        while (gen.active() > 0) {
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.finished(s)) gen.release(s);
        }
        BatchSession& bs = gen.session();
        const int rows[] = {0, 1, 2};
        const int toks[] = {ids[1], ids[2], ids[3]};
        for (int s = 0; s < 3; ++s) bs.prefill(s, std::span<const int>(ids.data(), 20));
        bs.decode(rows, toks);
        bs.prefill_step(1, std::span<const int>(ids.data(), 5));
    };
    cycle();  // warm-up: starts the thread team
    long n = 0;
    {
        Counting c;
        cycle();
        n = c.count();
    }
    CHECK_MESSAGE(n == 0, dir.filename().string(), " ", weight_type_name(w), ": ", n, " heap allocations");
}

}  // namespace

TEST_CASE("the batched runtime allocates nothing after creation") {
    for (WeightType w : {WeightType::f32, WeightType::q8, WeightType::q4, WeightType::q5, WeightType::q4k, WeightType::q5k,
                          WeightType::q6k, WeightType::q4a, WeightType::q5a}) {
        check_batch_no_allocation(test::fixtures_dir() / "llama-gqa-llama3", w);
        check_batch_no_allocation(test::fixtures_dir() / "gemma4-e2b-like-causal", w);
    }
}

// Constrained decoding: the cursor's mask buffer is made with the slot, so
// submit / step / release with a constraint allocate nothing either.
TEST_CASE("constrained BatchGenerator steps allocate nothing") {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(test::fixtures_dir() / "llama-gqa-llama3", lo);
    const int V = model->config().vocab;
    std::vector<std::string> bytes(static_cast<size_t>(V));
    for (int t = 1; t < V - 1; ++t) bytes[size_t(t)] = std::string(1, char(0x20 + t % 95));  // V-1: the stop id
    const auto c = Constraint::json_schema(R"({"type":"array","items":{"type":"integer"},"maxItems":3})",
                                           std::make_shared<const TokenVocabulary>(bytes));
    std::vector<int> ids(40);
    for (int i = 0; i < 40; ++i) ids[size_t(i)] = (i * 37 + 5) % V;
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session.max_seq = 64;
    bo.session.prefill_buckets = {8, 16};
    bo.session.append_buckets = {4};
    bo.session.threads = 2;
    BatchGenerator gen(model, bo, 8);
    SamplingOptions sampling;
    sampling.temperature = 0.9f;
    const std::vector<int> stop = {V - 1};
    auto cycle = [&] {
        for (int r = 0; r < 4; ++r) {
            while (gen.active() < gen.capacity())
                gen.submit(uint64_t(r), std::span<const int>(ids.data() + r, size_t(3 + 5 * r)), sampling, 12, stop,
                           -1, c);
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.finished(s)) gen.release(s);
        }
        while (gen.active() > 0) {
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.finished(s)) gen.release(s);
        }
    };
    cycle();  // warm-up
    long n = 0;
    {
        Counting cnt;
        cycle();
        n = cnt.count();
    }
    CHECK_MESSAGE(n == 0, n, " heap allocations");
}

// Speculation in BatchGenerator: drafting, decode_runs, verification,
// rewinds and a stop that cuts a step's tokens allocate nothing.
TEST_CASE("speculative BatchGenerator steps allocate nothing") {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 2;
    lo.load_tokenizer = false;
    auto model = Model::load(test::fixtures_dir() / "llama-gqa-llama3", lo);
    const int V = model->config().vocab;
    std::vector<int> ids(48);
    for (int i = 0; i < 48; ++i) ids[size_t(i)] = (i % 6) * 11 % V;  // a pattern to copy
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session.max_seq = 64;
    bo.session.prefill_buckets = {8, 16};
    bo.session.append_buckets = {4, 8};
    bo.session.threads = 2;
    bo.max_draft = 6;
    BatchGenerator gen(model, bo, 16);
    SpeculationOptions spec;
    spec.max_draft = 6;
    SamplingOptions sampled;
    sampled.temperature = 0.8f;
    sampled.top_k = 10;
    const std::vector<int> stop = {V - 1};
    int drafted = 0;
    auto cycle = [&] {
        for (int r = 0; r < 6; ++r) {
            while (gen.active() < gen.capacity()) {
                const int slot = gen.submit(uint64_t(r), std::span<const int>(ids.data() + r, size_t(20 + r)),
                                            r % 2 ? sampled : SamplingOptions{}, 12 + r, stop, r % 3 - 1,
                                            nullptr, spec);
                (void)slot;
            }
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s) {
                if (gen.in_use(s) && !gen.finished(s) && gen.generated(s).size() >= 6)
                    gen.stop(s, StopReason::stop_string, int(gen.generated(s).size()) - 1);
                if (gen.finished(s)) {
                    drafted += gen.stats(s).drafted_tokens;
                    gen.release(s);
                }
            }
        }
        while (gen.active() > 0) {
            gen.step();
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.finished(s)) {
                    drafted += gen.stats(s).drafted_tokens;
                    gen.release(s);
                }
        }
    };
    cycle();  // warm-up: starts the thread team
    long n = 0;
    {
        Counting c;
        cycle();
        n = c.count();
    }
    CHECK(drafted > 0);
    CHECK_MESSAGE(n == 0, n, " heap allocations");
}
