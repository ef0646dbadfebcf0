// One sequence's KV cache and position, and the rules every sequence of a
// session follows (the bucket rule, the token and memory checks, the cache
// shape). Session holds one Sequence, BatchSession one per slot; both make
// their SequenceRules from the SessionOptions, so a slot is a session alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache.hpp"
#include "staticlm/session.hpp"

namespace staticlm {

class Model;
class PrefixPool;

// The bucket rule of RUNTIME.md: the next step (Q, t) for n tokens at
// position P with the block sizes `sorted` (ascending, holding 1) and capacity
// K. The rule has no memory, so running it step by step gives the whole plan.
Step bucket_step(std::span<const int> sorted, int P, int n, int K);
// The whole plan of T tokens into out (room for T steps); returns its length.
size_t plan_into(std::span<const int> sorted, int P, int T, int K, Step* out);

// Error(input) for no tokens or an id outside 0..vocab-1 (naming its index),
// Error(capacity) when P + T exceeds max_seq. Allocates only to throw.
void check_tokens(std::span<const int> tokens, int P, int vocab, int max_seq);

// Error(capacity) when `bytes` exceed this machine's physical memory, before
// anything is allocated (a multi-terabyte request would otherwise end the
// process instead of throwing). The message is "invalid configuration: "
// + needs + " <bytes> bytes of KV cache, more than ... (lower " + lower + ")".
void check_memory(double bytes, const std::string& needs, const char* lower);

// What the sequences of one session share, checked and derived once from
// its SessionOptions.
struct SequenceRules {
    int max_seq = 0;   // K
    int vocab = 0;
    int q_max = 1;     // the largest prefill or append bucket
    int threads = 1;   // 0 in the options resolved to available_cpus()
    KvType kv = KvType::f16;
    bool ring_sliding = false;
    std::vector<int> prefill_buckets, append_buckets;  // normalized: sorted, with 1
    std::vector<KvLayerSpec> specs;                     // [n_layers] of the model
    const kernels::KernelTable* kt = nullptr;

    SequenceRules() = default;
    // Error(config) for max_seq < 1, a bad thread count or bad buckets.
    // Reserves the thread team, so that no call starts a thread.
    SequenceRules(const Model& model, const SessionOptions& options);

    uint64_t cache_bytes_needed() const;  // one sequence's KV cache
    void validate(std::span<const int> tokens, int P) const { check_tokens(tokens, P, vocab, max_seq); }
};

// One sequence: its KV cache and how far it reaches.
struct Sequence {
    StaticKVCache cache;
    int pos = 0;
    int high_water = 0;  // highest position written + 1 (the rewind limit of rings)

    Sequence() = default;
    explicit Sequence(const SequenceRules& rules);  // allocates the cache

    // A call from position P wrote K/V up to position `end` (exclusive). From
    // position 0 every slot before `end` was just rewritten: older writes no
    // longer limit rewind.
    void wrote(int P, int end) { high_water = P == 0 ? end : std::max(high_water, end); }
    int max_rewind() const { return cache.max_rewind(pos, high_water); }
    // Error(input) naming the limit when n is outside 0..max_rewind().
    void rewind(int n);
    void reset() { pos = high_water = 0; }
    void save_prefix(PrefixPool& pool, int entry) const;
    void load_prefix(const PrefixPool& pool, int entry, int n);
};

}  // namespace staticlm
