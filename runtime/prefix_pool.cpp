// PrefixPool: one full-storage KV arena (every position of every layer that
// owns K/V) whose entries are first-fit ranges; Session and BatchSession copy
// positions in and out of it (include/staticlm/prefix_pool.hpp).
#include "staticlm/prefix_pool.hpp"

#include <algorithm>
#include <new>
#include <string>

#include "cache/kv_cache.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "prefix_internal.hpp"

namespace staticlm {

struct PrefixPool::Impl {
    struct Entry {
        uint64_t key = 0;
        int offset = 0, length = 0;
        bool live = false, filled = false;
    };
    StaticKVCache cache;  // max_seq = capacity, no rings
    int capacity = 0;
    int session_max_seq = 0;
    bool ring = false;
    std::vector<Entry> entries;

    Entry& at(int e) {
        if (e < 0 || size_t(e) >= entries.size() || !entries[size_t(e)].live)
            throw Error(ErrorKind::input, "prefix pool: no entry " + std::to_string(e));
        return entries[size_t(e)];
    }
};

PrefixPool::PrefixPool(std::shared_ptr<const Model> model, const SessionOptions& session, int tokens)
    : impl_(std::make_unique<Impl>()) {
    if (!model) throw Error(ErrorKind::config, "prefix pool needs a model");
    if (tokens < 1)
        throw Error(ErrorKind::config, "prefix pool must hold >= 1 token, got " + std::to_string(tokens));
    Impl& p = *impl_;
    p.capacity = tokens;
    p.session_max_seq = session.max_seq;
    p.ring = session.ring_sliding;
    const std::vector<KvLayerSpec> specs = kv_layer_specs(model->config());
    try {
        p.cache = StaticKVCache(specs, tokens, session.kv, /*ring_sliding=*/false, 1);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::capacity, "out of memory allocating a prefix pool of " + std::to_string(tokens) +
                                             " tokens (lower --prefix-pool)");
    }
    p.entries.reserve(64);
}

PrefixPool::~PrefixPool() = default;

uint64_t PrefixPool::bytes_needed(const Model& model, KvType kv, int tokens) {
    if (tokens < 1) return 0;
    return StaticKVCache::bytes_needed(kv_layer_specs(model.config()), tokens, kv, false, 1);
}

int PrefixPool::capacity() const { return impl_->capacity; }
size_t PrefixPool::bytes() const { return impl_->cache.bytes(); }

int PrefixPool::used() const {
    int n = 0;
    for (const Impl::Entry& e : impl_->entries) n += e.live ? e.length : 0;
    return n;
}

int PrefixPool::find(uint64_t key) const {
    for (size_t i = 0; i < impl_->entries.size(); ++i)
        if (impl_->entries[i].live && impl_->entries[i].key == key) return int(i);
    return -1;
}

int PrefixPool::add(uint64_t key, int length) {
    Impl& p = *impl_;
    if (length < 1 || length > p.capacity) return -1;
    if (find(key) >= 0) throw Error(ErrorKind::input, "prefix pool: key " + std::to_string(key) + " is already held");
    // First fit over the gaps between live entries, in offset order.
    std::vector<std::pair<int, int>> used;  // (offset, end): few entries live at once
    for (const Impl::Entry& e : p.entries)
        if (e.live) used.emplace_back(e.offset, e.offset + e.length);
    std::sort(used.begin(), used.end());
    int at = 0;
    for (const auto& [b, e] : used) {
        if (b - at >= length) break;
        at = std::max(at, e);
    }
    if (p.capacity - at < length) return -1;
    size_t slot = 0;
    while (slot < p.entries.size() && p.entries[slot].live) ++slot;
    if (slot == p.entries.size()) p.entries.emplace_back();
    p.entries[slot] = {key, at, length, true, false};
    return int(slot);
}

void PrefixPool::remove(int entry) { impl_->at(entry).live = false; }
int PrefixPool::length(int entry) const { return impl_->at(entry).length; }
bool PrefixPool::filled(int entry) const { return impl_->at(entry).filled; }

// ---------------------------------------------------------------------------

void PrefixPoolAccess::save(PrefixPool& pool, int entry, const StaticKVCache& from, int from_pos) {
    PrefixPool::Impl& p = *pool.impl_;
    PrefixPool::Impl::Entry& e = p.at(entry);
    if (from.max_seq() != p.session_max_seq)
        throw Error(ErrorKind::input, "prefix pool: made for max_seq " + std::to_string(p.session_max_seq) +
                                          ", the session has " + std::to_string(from.max_seq()));
    if (from_pos < e.length)
        throw Error(ErrorKind::input, "prefix pool: entry of " + std::to_string(e.length) +
                                          " tokens, the session holds " + std::to_string(from_pos));
    if (from.min_slots() < e.length)
        throw Error(ErrorKind::input, "prefix pool: a ring cache of " + std::to_string(from.min_slots()) +
                                          " slots no longer holds the " + std::to_string(e.length) +
                                          " positions of the prefix");
    p.cache.copy_positions(from, 0, e.offset, e.length);
    e.filled = true;
}

void PrefixPoolAccess::load(const PrefixPool& pool, int entry, int n, StaticKVCache& to) {
    PrefixPool::Impl& p = *pool.impl_;
    const PrefixPool::Impl::Entry& e = p.at(entry);
    if (!e.filled) throw Error(ErrorKind::input, "prefix pool: entry " + std::to_string(entry) + " is not filled");
    if (n < 1 || n > e.length)
        throw Error(ErrorKind::input, "prefix pool: " + std::to_string(n) + " tokens asked of an entry of " +
                                          std::to_string(e.length));
    if (to.max_seq() != p.session_max_seq)
        throw Error(ErrorKind::input, "prefix pool: made for max_seq " + std::to_string(p.session_max_seq) +
                                          ", the session has " + std::to_string(to.max_seq()));
    to.copy_positions(p.cache, e.offset, 0, n);
}

}  // namespace staticlm
