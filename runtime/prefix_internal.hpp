// What Session and BatchSession use of a PrefixPool: copying positions
// 0 .. length-1 of a cache into an entry, and positions 0 .. n-1 back out.
#pragma once

#include "staticlm/prefix_pool.hpp"

namespace staticlm {

class StaticKVCache;

struct PrefixPoolAccess {
    // Throws Error(input) (nothing written) when the cache does not hold the
    // entry's positions (from_pos < length, or a ring that lost them).
    static void save(PrefixPool& pool, int entry, const StaticKVCache& from, int from_pos);
    // Throws Error(input) (nothing written) for an unfilled entry or n outside 1..length.
    static void load(const PrefixPool& pool, int entry, int n, StaticKVCache& to);
};

}  // namespace staticlm
