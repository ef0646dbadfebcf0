// Target-independent parts of attention: the scratch size (one layout shared by
// all targets, see attention_internal.hpp) and the argument check every
// implementation runs before touching memory.
#include <algorithm>
#include <string>

#include "kernels/attention_internal.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

size_t attention_scratch_bytes(int /*t*/, int /*n_heads*/, int head_dim, int n_threads) {
    if (head_dim <= 0) return 0;
    const size_t threads = n_threads > 1 ? size_t(n_threads) : 1;
    return threads * detail::attn_scratch_layout(head_dim).floats * sizeof(float);
}

bool attention_rows_exact(int t, int n_heads, int n_kv_heads, int n_threads) {
    if (t < 1 || n_kv_heads < 1 || n_heads < n_kv_heads) return true;
    return !detail::attn_splits_keys(t, n_heads, n_kv_heads, std::max(1, n_threads));
}

namespace detail {

void check_attention_args(const AttentionArgs& a) {
    auto fail = [](ErrorKind kind, const std::string& what) {
        throw Error(kind, "attention: " + what);
    };
    if (a.t < 0) fail(ErrorKind::input, "t = " + std::to_string(a.t) + " is negative");
    if (a.t == 0) return;
    if (a.head_dim <= 0) fail(ErrorKind::input, "head_dim = " + std::to_string(a.head_dim));
    if (a.kv_type != KvType::f16 && a.kv_type != KvType::f32 && a.kv_type != KvType::q8)
        fail(ErrorKind::input, "kv_type " + std::to_string(int(a.kv_type)) + " is not f16, f32 or q8");
    if (a.n_heads <= 0 || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
        fail(ErrorKind::input, "n_heads = " + std::to_string(a.n_heads) +
                                   " is not a positive multiple of n_kv_heads = " +
                                   std::to_string(a.n_kv_heads));
    if (a.pos0 < 0) fail(ErrorKind::input, "pos0 = " + std::to_string(a.pos0) + " is negative");
    if (!a.q || !a.k || !a.v || !a.out) fail(ErrorKind::input, "null q, k, v or out pointer");
    const size_t row = size_t(a.n_heads) * size_t(a.head_dim);
    if (a.t > 1 && (a.ldq < row || a.ldo < row))
        fail(ErrorKind::input, "ldq = " + std::to_string(a.ldq) + " / ldo = " +
                                   std::to_string(a.ldo) + " is below n_heads * head_dim = " +
                                   std::to_string(row));
    // The ring holds the last n_slots positions up to the block's last row; the
    // first row needs everything from its window start on.
    const long last = long(a.pos0) + a.t - 1;
    const long first = a.window > 0 ? std::max(0L, long(a.pos0) - a.window + 1) : 0L;
    if (a.n_slots <= 0 || last - first + 1 > a.n_slots)
        fail(ErrorKind::capacity, "the cache has " + std::to_string(a.n_slots) +
                                      " slots but the block at positions " +
                                      std::to_string(a.pos0) + ".." + std::to_string(last) +
                                      " with window " + std::to_string(a.window) + " needs " +
                                      std::to_string(last - first + 1));
}

}  // namespace detail
}  // namespace staticlm::kernels
