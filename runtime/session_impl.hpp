// Session's state, shared by session.cpp (the calls of RUNTIME.md) and
// session_state.cpp (saving and restoring it). Everything here is sized in
// the constructor.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "cache/kv_cache.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "staticlm/session.hpp"
#include "sequence.hpp"

namespace staticlm {

// Held for the length of every call that touches the session's state: a second
// thread entering meanwhile gets Error(busy) instead of corrupting pos and cache.
class SessionEntry {
public:
    explicit SessionEntry(std::atomic<bool>& busy);
    ~SessionEntry() { busy_.store(false, std::memory_order_release); }
    SessionEntry(const SessionEntry&) = delete;
    SessionEntry& operator=(const SessionEntry&) = delete;

private:
    std::atomic<bool>& busy_;
};

struct Session::Impl {
    std::shared_ptr<const Model> model;
    SessionOptions options;
    SequenceRules rules;  // buckets, threads, kernels, checks
    Sequence seq;         // the KV cache, pos and high_water
    std::vector<int> decode_buckets{1};
    Workspace ws;
    std::vector<float> last_logits;  // [vocab]
    std::vector<int> tokens;         // [max_seq]: the token at each position < seq.pos
    std::vector<Step> steps;         // capacity max_seq: a plan never has more steps than tokens
    size_t n_steps = 0;
    DumpSink dump;   // set_dump(); empty by default
    StopCheck stop;  // set_abort(); empty by default
    std::atomic<bool> busy{false};

    std::span<const float> run(std::span<const int> tokens, int P, const std::vector<int>& buckets,
                               LogitsSink sink);
    [[noreturn]] void throw_aborted(int P, int done, int n_tokens, size_t s, int step_end);
    [[noreturn]] void throw_non_finite(std::span<const int> tokens, int P,
                                       const std::vector<int>& buckets, int bad_pos);
};

}  // namespace staticlm
