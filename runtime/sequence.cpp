// The rules and state a Session and each slot of a BatchSession share: the
// bucket rule, the checks of tokens, memory and options, and a sequence's
// cache, position and rewind limit (sequence.hpp).
#include "sequence.hpp"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "kernels/parallel.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"
#include "internal.hpp"
#include "prefix_internal.hpp"

namespace staticlm {

// Sorted, deduplicated buckets with 1 added; validated against K.
std::vector<int> detail::normalize_buckets(const std::vector<int>& in, const char* what, int max_seq) {
    if (in.empty())
        throw Error(ErrorKind::config, std::string("invalid configuration: ") + what +
                                           " is empty (give at least one block size)");
    std::vector<int> out;
    out.reserve(in.size() + 1);
    for (int b : in) {
        if (b < 1 || b > max_seq)
            throw Error(ErrorKind::config, std::string("invalid configuration: ") + what +
                                               " has block size " + std::to_string(b) +
                                               " outside 1.." + std::to_string(max_seq) +
                                               " (max_seq)");
        out.push_back(b);
    }
    out.push_back(1);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

Step bucket_step(std::span<const int> sorted, int P, int n, int K) {
    int q = 0;
    for (int b : sorted)
        if (b >= n && P + b <= K) {
            q = b;
            break;
        }
    if (q == 0)
        for (int b : sorted)
            if (P + b <= K) q = b;  // sorted ascending: ends at the largest that fits
    return {q, std::min(q, n)};
}

size_t plan_into(std::span<const int> sorted, int P, int T, int K, Step* out) {
    size_t n_steps = 0;
    for (int n = T; n > 0;) {
        const Step st = bucket_step(sorted, P, n, K);
        out[n_steps++] = st;
        P += st.t;
        n -= st.t;
    }
    return n_steps;
}

void check_tokens(std::span<const int> tokens, int P, int vocab, int max_seq) {
    if (tokens.empty()) throw Error(ErrorKind::input, "empty input: no tokens to process");
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            throw Error(ErrorKind::input, "invalid token id " + std::to_string(tokens[i]) +
                                              " at index " + std::to_string(i) +
                                              " (vocab size " + std::to_string(vocab) + ")");
    const long long end = (long long)P + (long long)tokens.size();
    if (end > max_seq)
        throw Error(ErrorKind::capacity,
                    "capacity exceeded: P=" + std::to_string(P) + " + T=" +
                        std::to_string(tokens.size()) + " > K=" + std::to_string(max_seq) +
                        " (max_seq)");
}

void check_memory(double bytes, const std::string& needs, const char* lower) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return;  // unknown: let the allocation decide
    const double memory = double(pages) * double(page);
    if (bytes > memory)
        throw Error(ErrorKind::capacity,
                    "invalid configuration: " + needs + " " +
                        std::to_string(uint64_t(std::min(bytes, 1.8e19))) +
                        " bytes of KV cache, more than the " + std::to_string(uint64_t(memory)) +
                        " bytes of memory of this machine (lower " + lower + ")");
}

SequenceRules::SequenceRules(const Model& model, const SessionOptions& o) {
    if (o.max_seq < 1)
        throw Error(ErrorKind::config,
                    "invalid configuration: max_seq must be >= 1, got " + std::to_string(o.max_seq));
    detail::check_threads(o.threads, "configuration");
    max_seq = o.max_seq;
    vocab = model.config().vocab;
    kv = o.kv;
    ring_sliding = o.ring_sliding;
    prefill_buckets = detail::normalize_buckets(o.prefill_buckets, "prefill_buckets", o.max_seq);
    append_buckets = detail::normalize_buckets(o.append_buckets, "append_buckets", o.max_seq);
    q_max = std::max(prefill_buckets.back(), append_buckets.back());
    threads = o.threads == 0 ? available_cpus() : o.threads;
    kernels::reserve_threads(threads);  // regions never start a thread
    kt = &kernels::table();
    specs = kv_layer_specs(model.config());
}

uint64_t SequenceRules::cache_bytes_needed() const {
    return StaticKVCache::bytes_needed(specs, max_seq, kv, ring_sliding, q_max);
}

Sequence::Sequence(const SequenceRules& r) : cache(r.specs, r.max_seq, r.kv, r.ring_sliding, r.q_max) {}

void Sequence::rewind(int n) {
    const int limit = max_rewind();
    if (n < 0 || n > limit)
        throw Error(ErrorKind::input, "cannot rewind " + std::to_string(n) + " tokens: position " +
                                          std::to_string(pos) + ", at most " +
                                          std::to_string(limit) + " can be rewound" +
                                          (limit < pos
                                               ? " (the ring caches of sliding layers hold only "
                                                 "window + Q_max positions)"
                                               : ""));
    pos -= n;
}

void Sequence::save_prefix(PrefixPool& pool, int entry) const {
    PrefixPoolAccess::save(pool, entry, cache, pos);
}

void Sequence::load_prefix(const PrefixPool& pool, int entry, int n) {
    PrefixPoolAccess::load(pool, entry, n, cache);
    pos = n;
    high_water = n;
}

}  // namespace staticlm
