// Session: the static runtime of RUNTIME.md. Everything (KV cache, workspace,
// logits) is allocated at construction; prefill / append / decode / rewind
// then allocate nothing. Every call succeeds completely or throws Error and
// leaves the session as it was. A session is used by one thread at a time: a
// call entered while another is running throws Error(busy). Any number of
// sessions may share one Model, each on its own thread. Logits that are not
// finite are an Error(model) naming the first layer that produced them. An
// abort callback may stop a call between layers (Error(aborted)); the session
// then keeps the steps that completed. A session's state can be saved and
// restored into another session of the same model and options
// (docs/EMBEDDING.md has the format).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "staticlm/types.hpp"

namespace staticlm {

class Model;
class PrefixPool;

// The default bucket sets for a capacity K: {64, 128, 256, 512} (prefill) and
// {16, 32, 64} (append), without the sizes above K, plus K itself when K is
// below the largest (so a prompt of up to K tokens runs as one block).
std::vector<int> default_prefill_buckets(int max_seq);
std::vector<int> default_append_buckets(int max_seq);

struct SessionOptions {
    int max_seq = 2048;                               // K
    // The defaults of K = 2048; for another K use default_*_buckets(K).
    std::vector<int> prefill_buckets = {64, 128, 256, 512};
    std::vector<int> append_buckets = {16, 32, 64};
    KvType kv = KvType::f16;
    int threads = 0;          // 0: the CPUs of this process's affinity set; at most max_threads()
    // Sinks see every row: a buffer of min(Q_max, kLogitsRows) rows of logits,
    // which a block fills kLogitsRows rows at a time (a speculative draft's
    // whole verification at once: kMaxDraft + 1 rows).
    bool all_logits = false;
    bool ring_sliding = false;  // sliding layers keep window + Q_max slots
};

// The rows of logits a session with all_logits holds at once (65: one
// speculative verification of kMaxDraft drafted tokens and the token before
// them; 65 MiB with Gemma 3's 262144-token vocabulary, where Q_max = 512 rows
// would take 512 MiB).
constexpr int kLogitsRows = 65;

// One step of a plan: a block of Q rows of which the first t are valid.
struct Step {
    int q = 0;
    int t = 0;
    bool operator==(const Step&) const = default;
};

// Receives the logits of every valid row of each step (needs all_logits):
// rows [t][vocab] for positions pos .. pos + t - 1, in pieces of at most
// kLogitsRows rows.
struct LogitsSink {
    void (*fn)(void* ctx, int pos, const float* rows, int t, int vocab) = nullptr;
    void* ctx = nullptr;
    explicit operator bool() const { return fn != nullptr; }
};

// Receives every named intermediate of the forward pass (names in
// model/graph.cpp): rows x cols floats, rows ld floats apart; layer -1 for
// model-level tensors. For `staticlm verify --dump`; slows every call.
using DumpFn = void (*)(void* ctx, const char* name, int layer, const float* data, int rows,
                        int cols, size_t ld);

// Asked between layers on the thread running a call; returns true to stop it.
// It may read state another thread sets (an atomic flag); it must not call
// into the session.
using AbortFn = bool (*)(void* ctx);

class Session {
public:
    Session(std::shared_ptr<const Model> model, const SessionOptions& options);
    ~Session();
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // reset() + append(tokens) with the prefill buckets. Returns the logits of the last token.
    std::span<const float> prefill(std::span<const int> tokens, LogitsSink sink = {});
    // Adds tokens at positions pos() .. pos()+T-1 with the append buckets.
    std::span<const float> append(std::span<const int> tokens, LogitsSink sink = {});
    // One token as a Q = 1 step.
    std::span<const float> decode(int token);
    // Forgets the last n tokens (0 <= n <= pos(); ring caches: see max_rewind()).
    void rewind(int n);
    void reset();
    // Shared prompt prefixes (include/staticlm/prefix_pool.hpp). save_prefix
    // copies positions 0 .. pool.length(entry) - 1, which the session must
    // hold, into the entry. load_prefix is reset() and then positions 0 .. n-1
    // from a filled entry (1 <= n <= its length): pos() == n as after a
    // prefill of those n tokens, without their logits (append at least one
    // token before reading logits()). Both throw Error(input), changing nothing,
    // when the pool was made for other session options.
    void save_prefix(PrefixPool& pool, int entry);
    void load_prefix(const PrefixPool& pool, int entry, int n);
    // Sets (fn != nullptr) or clears the dump callback used by later calls.
    void set_dump(DumpFn fn, void* ctx);
    // Sets (fn != nullptr) or clears the abort callback of later calls. When
    // it returns true, the call throws Error(aborted) within one layer's time:
    // the steps (blocks) it completed stay in the cache and pos() counts
    // them, the interrupted step is discarded, logits() are not updated.
    void set_abort(AbortFn fn, void* ctx);

    // Saved state (session_state.cpp): the tokens, their K/V (only positions
    // < pos()), the last logits and the model's identity, with a checksum.
    // state_bytes() is the exact size save_state() writes now; save_state()
    // throws Error(capacity) when out is smaller and returns the bytes written.
    size_t state_bytes() const;
    size_t save_state(std::span<std::byte> out) const;
    // Restores a state saved by a session of the same model (config, weight
    // format and weights), KV type, max_seq and ring option. Anything else,
    // a truncated or altered state: Error naming what differs, the session
    // unchanged. Buckets and threads may differ (then later logits agree
    // within the split invariance rather than bit for bit).
    void load_state(std::span<const std::byte> in);
    // The same through a file (a regular file of at most max_state_bytes()).
    void save_state_file(const std::filesystem::path& path) const;
    void load_state_file(const std::filesystem::path& path);
    // The size of a state at pos() == max_seq(): the largest this session accepts.
    size_t max_state_bytes() const;

    int pos() const;
    int max_seq() const;
    int vocab() const;
    int max_rewind() const;
    int threads() const;
    // Logits of the last token of the last successful call ([vocab]).
    std::span<const float> logits() const;
    // The tokens in the cache, by position ([pos()]); -1 at positions that
    // came from a PrefixPool (load_prefix), which keeps K/V but not ids.
    std::span<const int> tokens() const;
    // The steps the last successful call ran.
    std::span<const Step> last_plan() const;
    const Model& model() const;
    const SessionOptions& options() const;
    size_t cache_bytes() const;
    size_t cache_bytes_per_token() const;
    size_t workspace_bytes() const;

    // The bucket rule of RUNTIME.md: the (Q, t) steps that process T tokens
    // starting at position P with capacity K (1 is always a bucket).
    static std::vector<Step> plan(std::span<const int> buckets, int P, int T, int K);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm
