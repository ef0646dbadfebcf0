// A prefix pool: the K/V of shared prompt prefixes (a system prompt, a
// few-shot block), computed once in a session or batch slot and copied into
// every session or slot whose prompt starts with them. One KV arena of a fixed
// number of tokens, allocated at creation; an entry is a range of it. Copies
// are bit for bit, so a prompt continued after a loaded prefix gives what the
// whole prompt gives when every row is computed exactly (docs/BATCH.md).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "staticlm/session.hpp"

namespace staticlm {

class Model;

class PrefixPool {
public:
    // `tokens` positions of K/V for sessions made with `session` (same KV type,
    // max_seq and ring setting as those that save and load). Throws
    // Error(config) for tokens < 1, Error(capacity) when it cannot be allocated.
    PrefixPool(std::shared_ptr<const Model> model, const SessionOptions& session, int tokens);
    ~PrefixPool();
    PrefixPool(const PrefixPool&) = delete;
    PrefixPool& operator=(const PrefixPool&) = delete;

    // The arena a pool of `tokens` positions allocates (every layer that owns
    // K/V keeps every position), computed without allocating.
    static uint64_t bytes_needed(const Model& model, KvType kv, int tokens);

    int capacity() const;  // tokens
    size_t bytes() const;
    int used() const;      // tokens held by entries

    // Entries are named by the caller's key. find: the entry or -1. add: a
    // range of `length` tokens (first fit), not yet filled; -1 when no free
    // range is long enough. A key is added once.
    int find(uint64_t key) const;
    int add(uint64_t key, int length);
    void remove(int entry);
    int length(int entry) const;
    bool filled(int entry) const;  // Session::save_prefix / BatchSession::save_prefix ran

private:
    friend struct PrefixPoolAccess;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm
