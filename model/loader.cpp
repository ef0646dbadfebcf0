// Model::load: config + safetensors → one arena of packed weights. Every
// required tensor is checked (presence, shape, dtype) before any allocation;
// conversion then runs in parallel over panel-aligned row chunks, read with
// pread into per-thread scratch (a file truncated meanwhile is an error naming
// it, never a SIGBUS), and rejects non-finite values (error naming the tensor
// and the flat index of the first).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

#include "model/config.hpp"
#include "model/family.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {

// The source tensor's rows: the matrix's own, or a fused tensor's (RowSource).
int64_t tensor_rows(const WeightEntry& e) { return e.rows.tensor_rows ? e.rows.tensor_rows : e.n; }

std::string shape_of(const WeightEntry& e) {
    if (e.kind == WeightEntry::Kind::matrix)
        return "[" + std::to_string(tensor_rows(e)) + ", " + std::to_string(e.k) + "]";
    return "[" + std::to_string(e.n) + "]";
}

bool shape_matches(const WeightEntry& e, const TensorView& t) {
    switch (e.kind) {
        case WeightEntry::Kind::matrix:
            return t.shape.size() == 2 && t.shape[0] == tensor_rows(e) && t.shape[1] == e.k;
        case WeightEntry::Kind::vector: return t.shape.size() == 1 && t.shape[0] == e.n;
        case WeightEntry::Kind::scalar: return t.numel == 1 && t.shape.size() <= 1;
    }
    return false;
}

// Index of the first non-finite element (all exponent bits set) of
// src[begin, end), or -1. Blocks are OR-reduced without an early exit, so the
// loop vectorizes; only a block with a hit is scanned again for its index.
template <class T, T kExpMask>
int64_t first_non_finite_in(const std::byte* src, uint64_t begin, uint64_t end) {
    constexpr uint64_t kBlock = 1024;
    for (uint64_t b = begin; b < end; b += kBlock) {
        const uint64_t e = std::min(end, b + kBlock);
        T hit = 0;
        for (uint64_t i = b; i < e; ++i) {
            T v;
            std::memcpy(&v, src + sizeof(T) * i, sizeof(T));  // tensors need not be aligned
            hit |= T((v & kExpMask) == kExpMask);
        }
        if (!hit) continue;
        for (uint64_t i = b; i < e; ++i) {
            T v;
            std::memcpy(&v, src + sizeof(T) * i, sizeof(T));
            if ((v & kExpMask) == kExpMask) return int64_t(i);
        }
    }
    return -1;
}

int64_t first_non_finite(SrcType st, const std::byte* src, uint64_t begin, uint64_t end) {
    switch (st) {
        case SrcType::f32: return first_non_finite_in<uint32_t, 0x7f800000u>(src, begin, end);
        case SrcType::f16: return first_non_finite_in<uint16_t, 0x7c00>(src, begin, end);
        case SrcType::bf16: return first_non_finite_in<uint16_t, 0x7f80>(src, begin, end);
    }
    return -1;
}

[[noreturn]] void throw_non_finite(const TensorView& t, int64_t index) {
    throw Error(ErrorKind::model, "non-finite value (inf or NaN) at flat index " + std::to_string(index) +
                                      " of " + t.where());
}

struct Task {
    size_t entry;
    int n0, n1;
};

// Tying as transformers does it: the config's flag, unless the checkpoint
// also holds an lm_head.weight that differs from the embedding, which
// transformers then loads untied (with a warning).
// Whether two tensors hold the same bytes, read in chunks (the tensors of a
// safetensors file are read with pread, not mapped).
bool same_bytes(const TensorView& a, const TensorView& b) {
    if (a.bytes != b.bytes) return false;
    if (a.data && b.data) return std::memcmp(a.data, b.data, a.bytes) == 0;
    constexpr size_t kChunk = size_t(1) << 20;
    std::vector<std::byte> ba(std::min(kChunk, a.bytes)), bb(ba.size());
    for (size_t at = 0; at < a.bytes; at += kChunk) {
        const size_t n = std::min(kChunk, a.bytes - at);
        read_tensor_bytes(a, at, n, ba.data());
        read_tensor_bytes(b, at, n, bb.data());
        if (std::memcmp(ba.data(), bb.data(), n) != 0) return false;
    }
    return true;
}

void decide_tying(ModelConfig& c, const SafetensorsSet& files, const detail::TensorNaming& names,
                  std::vector<std::string>& warnings) {
    if (!c.tie_embeddings) return;
    const TensorView* head = files.find(names(WeightRole::lm_head, -1, nullptr));
    const TensorView* embed = files.find(names(WeightRole::embed, -1, nullptr));
    if (!head || !embed) return;
    const bool same = head->dtype == embed->dtype && head->shape == embed->shape && same_bytes(*head, *embed);
    if (same) return;
    c.tie_embeddings = false;
    warnings.push_back("the config ties the output head to the embedding (tie_word_embeddings), but " +
                       head->where() + " differs from it: using it as the head, as transformers does");
}

// Every checkpoint tensor the plan does not use is named in a warning: towers
// of multimodal checkpoints and K/V of KV-sharing layers as one line per
// group, anything else one line per tensor (the first kMaxListed).
void warn_unused(const SafetensorsSet& files, const std::vector<WeightEntry>& plan, const ModelConfig& c,
                 const FamilyDescriptor& family, const detail::TensorNaming& names,
                 std::vector<std::string>& warnings) {
    constexpr size_t kMaxListed = 10;
    std::set<std::string> used;
    for (const WeightEntry& e : plan) used.insert(e.name);
    // A tied checkpoint may carry a copy of the embedding as lm_head (decide_tying checked it).
    if (c.tie_embeddings) used.insert(names(WeightRole::lm_head, -1, nullptr));
    const std::vector<std::string> design = detail::unused_by_design(c, names);
    const std::set<std::string> by_design(design.begin(), design.end());
    std::vector<std::vector<std::string>> groups(family.ignored.size());
    std::vector<std::string> shared_kv, other;
    for (const auto& [name, view] : files.tensors()) {
        if (used.count(name)) continue;
        if (by_design.count(name)) {
            shared_kv.push_back(name);
            continue;
        }
        bool grouped = false;
        for (size_t g = 0; g < family.ignored.size() && !grouped; ++g)
            if (name.starts_with(family.ignored[g].prefix)) {
                groups[g].push_back(name);
                grouped = true;
            }
        if (!grouped) other.push_back(name);
    }
    for (size_t g = 0; g < groups.size(); ++g)
        if (!groups[g].empty())
            warnings.push_back("skipped " + std::to_string(groups[g].size()) + " tensors of the " +
                               std::string(family.ignored[g].what) + " (" + std::string(family.ignored[g].prefix) +
                               "*) in " + files.describe() + ": staticlm runs the text decoder only");
    if (!shared_kv.empty())
        warnings.push_back("skipped " + std::to_string(shared_kv.size()) +
                           " K/V tensors of KV-sharing layers, which read an earlier layer's K/V (first: '" +
                           shared_kv[0] + "') in " + files.describe());
    for (size_t i = 0; i < other.size() && i < kMaxListed; ++i)
        warnings.push_back(files.find(other[i])->where() + " is not used by this " + c.architecture + " model");
    if (other.size() > kMaxListed)
        warnings.push_back("... and " + std::to_string(other.size() - kMaxListed) + " more unused tensors in " +
                           files.describe());
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::filesystem::path& dir, const LoadOptions& options) {
    const auto t_start = std::chrono::steady_clock::now();
    detail::check_threads(options.threads, "load options");
    detail::check_act_bits(options.act_bits);
    if (std::filesystem::is_regular_file(dir) && dir.extension() == ".bin") return detail::load_llama2c(dir, options);
    // A .gguf path that is not a directory is a GGUF file (the reader says what
    // is wrong when it is missing or not a regular file).
    if (dir.extension() == ".gguf" && !std::filesystem::is_directory(dir)) return detail::load_gguf(dir, options);
    auto model = std::make_shared<Model>();
    CheckpointConfig checkpoint = read_checkpoint_config(dir);
    model->config_ = std::move(checkpoint.config);
    ModelConfig& c = model->config_;
    const FamilyDescriptor& family = *checkpoint.family;
    const SafetensorsSet files(dir);

    // The first of the family's layouts whose embedding exists.
    detail::TensorNaming names{family.hf_name, family.hf_layouts.back()};
    for (const TensorLayout& layout : family.hf_layouts)
        if (files.find(family.hf_name(WeightRole::embed, -1, nullptr, layout))) {
            names.layout = layout;
            break;
        }
    decide_tying(c, files, names, model->warnings_);
    std::vector<WeightEntry> plan = detail::plan_weights(c, model->weights_, names);

    // Resolve and check everything before allocating.
    std::vector<const TensorView*> src(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        const TensorView* t = files.find(e.name);
        if (!t)
            throw Error(ErrorKind::model,
                        "missing tensor '" + e.name + "' (expected shape " + shape_of(e) + ") in " + files.describe() +
                            (e.role == WeightRole::lm_head
                                 ? " (tie_word_embeddings is false: the output head is a tensor of its own)"
                                 : ""));
        if (!shape_matches(e, *t))
            throw Error(ErrorKind::model, "wrong shape of " + t->where() + ": expected " + shape_of(e) +
                                              ", got " + t->shape_string());
        weight_src_type(*t);  // throws unsupported naming the tensor
        src[i] = t;
    }
    warn_unused(files, plan, c, family, names, model->warnings_);

    detail::convert_weights(*model, plan, src, options);
    detail::finish_weights(*model, std::move(plan), options.act_bits);
    if (options.load_tokenizer) model->tokenizer_ = load_tokenizer(dir, options.prefer_tokenizer_json);
    model->load_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return model;
}

namespace detail {

void convert_weights(Model& model, std::vector<WeightEntry>& plan, const std::vector<const TensorView*>& src,
                     const LoadOptions& options) {
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < plan.size(); ++i)  // a fused tensor counts once per matrix it holds, by its rows
        total_bytes += plan[i].kind == WeightEntry::Kind::matrix
                           ? uint64_t(plan[i].n) * uint64_t(plan[i].k) * dtype_size(src[i]->dtype)
                           : src[i]->bytes;
    const WeightType type = options.weights;
    model.weight_type_ = type;
    model.native_weights_ = options.native_weights;
    std::vector<WeightType> native(plan.size(), type);
    if (options.native_weights)
        for (size_t i = 0; i < plan.size(); ++i)
            if (plan[i].kind == WeightEntry::Kind::matrix) {
                const SrcType st = weight_src_type(*src[i]);
                native[i] = st == SrcType::f16 ? WeightType::f16 : st == SrcType::bf16 ? WeightType::bf16 : WeightType::f32;
            }
    model.arena_ = detail::layout_arena(plan, type, options.native_weights ? &native : nullptr);

    // Scalars and vectors: small, converted here.
    uint64_t small_bytes = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind == WeightEntry::Kind::matrix) continue;
        const TensorView& t = *src[i];
        const SrcType st = weight_src_type(t);
        std::vector<std::byte> raw(t.bytes);
        read_tensor_bytes(t, 0, t.bytes, raw.data());
        const int64_t bad = first_non_finite(st, raw.data(), 0, t.numel);
        if (bad >= 0) throw_non_finite(t, bad);
        std::vector<float> v(t.numel);
        for (uint64_t j = 0; j < t.numel; ++j) {
            if (st == SrcType::f32) {
                std::memcpy(&v[j], raw.data() + 4 * j, 4);
            } else {
                uint16_t h;
                std::memcpy(&h, raw.data() + 2 * j, 2);
                v[j] = st == SrcType::f16 ? kernels::f16_to_f32(h) : kernels::bf16_to_f32(h);
            }
        }
        small_bytes += t.bytes;
        if (e.kind == WeightEntry::Kind::scalar) {
            *e.scalar = v[0];
        } else {
            // An RMSNorm weight gets (offset + w) once, here; a bias stays as stored.
            float* dst = const_cast<float*>(*e.vector);
            std::memcpy(dst, v.data(), v.size() * sizeof(float));
            if (e.norm && model.config_.norm_weight_offset != 0.0f)
                for (size_t j = 0; j < v.size(); ++j) dst[j] += model.config_.norm_weight_offset;
        }
    }

    // Matrices: panel-aligned row chunks, converted in parallel.
    std::vector<Task> tasks;
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind != WeightEntry::Kind::matrix) continue;
        const int rows = detail::chunk_rows(e.k, dtype_size(src[i]->dtype));
        for (int n0 = 0; n0 < e.n; n0 += rows) tasks.push_back({i, n0, std::min(e.n, n0 + rows)});
    }
    std::atomic<uint64_t> done{small_bytes};
    const int n_threads = detail::resolve_threads(options.threads);
    const long n_tasks = long(tasks.size());
    // Bytes between consecutive panels of a packed matrix: packed_bytes rounds
    // only the total up to 64 bytes, so 64 panels give an exact multiple.
    std::vector<size_t> panel_stride(plan.size(), 0);
    for (size_t i = 0; i < plan.size(); ++i)
        if (plan[i].kind == WeightEntry::Kind::matrix)
            panel_stride[i] = kernels::packed_bytes(plan[i].matrix->type, 64 * kernels::kPanelRows, plan[i].k) / 64;

    // Source rows read from the file, per thread.
    using Scratch = std::vector<std::byte>;
    detail::run_tasks_in_order<Scratch>(n_threads, n_tasks, [&](long ti, const kernels::Team& team,
                                                                Scratch& scratch) {
        const Task& task = tasks[size_t(ti)];
        const WeightEntry& e = plan[task.entry];
        const TensorView& t = *src[task.entry];
        const SrcType st = weight_src_type(t);
        // Scan and pack ~128 KiB of source at a time, so that packing reads
        // the rows from L2 right after the scan brought them in.
        const size_t row_bytes = size_t(e.k) * dtype_size(t.dtype);
        const int step = std::max<int>(kernels::kPanelRows,
                                       int((size_t{128} << 10) / row_bytes) /
                                           kernels::kPanelRows * kernels::kPanelRows);
        for (int r0 = task.n0; r0 < task.n1; r0 += step) {
            const int r1 = std::min(task.n1, r0 + step);
            const size_t n_bytes = size_t(r1 - r0) * row_bytes;
            // Tensor rows row0 + r0 .. in order, or one at a time where the
            // rows are permuted (partial rotary q/k).
            const int64_t first = e.rows.row0 + r0;
            const std::byte* rows = t.data && !e.rows.permuted() ? t.data + size_t(first) * row_bytes : nullptr;
            if (!rows) {
                scratch.resize(std::max(scratch.size(), n_bytes));
                if (!e.rows.permuted()) {
                    read_tensor_bytes(t, uint64_t(first) * row_bytes, n_bytes, scratch.data());
                } else {
                    for (int r = r0; r < r1; ++r) {
                        const uint64_t at = uint64_t(e.rows.row0 + e.rows.source(r)) * row_bytes;
                        std::byte* dst = scratch.data() + size_t(r - r0) * row_bytes;
                        if (t.data)
                            std::memcpy(dst, t.data + at, row_bytes);
                        else
                            read_tensor_bytes(t, at, row_bytes, dst);
                    }
                }
                rows = scratch.data();
            }
            const int64_t bad = first_non_finite(st, rows, 0, uint64_t(r1 - r0) * uint64_t(e.k));
            if (bad >= 0) {
                const int64_t r = r0 + bad / e.k;
                throw_non_finite(t, (e.rows.row0 + e.rows.source(r)) * e.k + bad % e.k);
            }
            kernels::pack_weights(e.matrix->type, st, rows, r1 - r0, e.k, 0, r1 - r0,
                                  e.matrix->data + size_t(r0 / kernels::kPanelRows) *
                                                       panel_stride[task.entry]);
        }
        const uint64_t bytes = uint64_t(task.n1 - task.n0) * uint64_t(e.k) * dtype_size(t.dtype);  // of this entry
        const uint64_t now = done.fetch_add(bytes) + bytes;
        if (team.tid() == 0 && options.progress) options.progress(now, total_bytes);
    });
    if (options.progress) options.progress(total_bytes, total_bytes);
}

}  // namespace detail

}  // namespace staticlm
