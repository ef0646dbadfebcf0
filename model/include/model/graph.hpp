// The decoder forward pass over a block of t tokens at positions pos0 ..
// pos0+t-1: one code path for prefill, append and decode, for every family.
// Per-layer differences (head dims, window, KV source, FFN width, norms, PLE)
// come from LayerConfig fields. Buffers come from a Workspace sized once for
// the largest block; forward() performs no heap allocation.
#pragma once

#include <span>
#include <cstddef>
#include <cstdint>

#include "cache/kv_cache.hpp"
#include "kernels/memory.hpp"
#include "model/model.hpp"

namespace staticlm {

// Called with every named intermediate when set (for `staticlm verify --dump`).
// rows × cols floats, rows ld floats apart; layer -1 for model-level tensors.
struct DumpSink {
    void (*fn)(void* ctx, const char* name, int layer, const float* data, int rows, int cols,
               size_t ld) = nullptr;
    void* ctx = nullptr;
    explicit operator bool() const { return fn != nullptr; }
    void operator()(const char* name, int layer, const float* data, int rows, int cols,
                    size_t ld) const {
        fn(ctx, name, layer, data, rows, cols, ld);
    }
};

// Asked between layers, on the thread that runs forward() (never inside a
// kernel's parallel region): true stops the block there (Session::set_abort).
struct StopCheck {
    bool (*fn)(void* ctx) = nullptr;
    void* ctx = nullptr;
    bool operator()() const { return fn != nullptr && fn(ctx); }
};

class Workspace {
public:
    Workspace() = default;
    // logits_rows (1..q_max): the rows of logits held at once ([logits_rows][V]);
    // a block with more rows gets its head in pieces of that many (ForwardArgs::
    // on_rows). weights: every format the model's matrices are in (matmul scratch).
    Workspace(const ModelConfig& config, std::span<const WeightType> weights, int q_max, int n_threads,
              int logits_rows);

    int q_max() const { return q_max_; }
    int logits_rows() const { return logits_rows_; }
    size_t bytes() const { return arena_.size(); }

    // All [q_max][...] fp32 unless noted; row strides are the widths below.
    float* x = nullptr;         // [q][H] residual stream
    float* xn = nullptr;        // [q][H] normed input of a block
    float* tmp = nullptr;       // [q][H] block output before the residual add
    float* q = nullptr;         // [q][n_heads*hd_max]
    float* k = nullptr;         // [q][n_kv*hd_max]
    float* v = nullptr;         // [q][n_kv*hd_max]
    float* attn = nullptr;      // [q][n_heads*hd_max]
    float* gate = nullptr;      // [q][F_max]
    float* up = nullptr;        // [q][F_max]
    float* ple = nullptr;       // [q][L*D] per-layer inputs (Gemma 4), else null
    float* ple_tmp = nullptr;   // [q][L*D]
    float* logits = nullptr;    // [logits_rows][V]
    std::byte* matmul_scratch = nullptr;
    std::byte* attn_scratch = nullptr;

    size_t ld_q = 0, ld_kv = 0, ld_ffn = 0, ld_ple = 0;

private:
    Buffer arena_;
    int q_max_ = 0;
    int logits_rows_ = 1;
};

// Receives the logits of rows [row0, row0 + rows) of a block (Logits::all),
// which lie in ws.logits [rows][V]; false stops the block (forward() then
// returns false, as for StopCheck).
struct RowsSink {
    bool (*fn)(void* ctx, int row0, int rows) = nullptr;
    void* ctx = nullptr;
};

// Rows that are independent sequences (continuous batching): row i is the
// token at position pos[i] of the sequence whose K/V live in caches[i]. Each
// row is computed exactly as a one-row decode of that sequence alone: the
// same kernels on the same row, attention per sequence over its own cache.
struct SequenceRows {
    const int* pos = nullptr;                  // [t]
    StaticKVCache* const* caches = nullptr;    // [t]
};

struct ForwardArgs {
    const int* tokens = nullptr;  // [t]
    int t = 0;
    int pos0 = 0;
    const SequenceRows* seqs = nullptr;  // set: rows are sequences; pos0 and the cache argument are unused
    // Rows whose logits are wanted: all t rows (logits[i] for row i) or only the last
    // (written to logits row 0). no_logits skips the head entirely.
    // With all, a block of more rows than ws.logits_rows() needs on_rows: the
    // head then runs on pieces of logits_rows rows (the same values: a row's
    // matmul does not depend on the rows next to it), each given to on_rows.
    enum class Logits { last, all, none } logits = Logits::last;
    // Set: the logits land here instead (row i at logits_out + i·vocab), all
    // rows in one piece (on_rows unused), where ws.logits holds fewer rows or
    // the caller wants them in its own buffer without a copy.
    float* logits_out = nullptr;
    RowsSink on_rows;
    int n_threads = 1;
    DumpSink dump;
    StopCheck stop;  // asked before every layer and before the head
};

// Runs the block; logits land in ws.logits (or args.logits_out). Token ids must already be valid.
// Returns false when args.stop asked to stop: the block is then incomplete
// (some layers may have stored K/V of its positions, the logits are not set).
bool forward(const Model& model, const kernels::KernelTable& kt, StaticKVCache& cache,
             Workspace& ws, const ForwardArgs& args);

// The K/V layer specs a session's cache needs for this config.
std::vector<KvLayerSpec> kv_layer_specs(const ModelConfig& config);

}  // namespace staticlm
