// The checks behind `staticlm verify` and `staticlm perplexity`: reading a
// reference file, teacher-forced and multi-turn comparisons, dumps of named
// intermediates, and perplexity. Sessions here are made per call (not a hot path).
#include "staticlm/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/safetensors.hpp"
#include "staticlm/error.hpp"
#include "staticlm/model.hpp"

namespace staticlm {

namespace {

// Copies every valid row of a step into a [positions][vocab] buffer.
struct RowCollector {
    std::vector<float>* out;  // [capacity][vocab]
    int base = 0;             // position of out's row 0
    static void sink(void* ctx, int pos, const float* rows, int t, int vocab) {
        auto* self = static_cast<RowCollector*>(ctx);
        const size_t need = size_t(pos - self->base + t) * size_t(vocab);
        if (self->out->size() < need) self->out->resize(need);
        std::copy(rows, rows + size_t(t) * size_t(vocab),
                  self->out->begin() + ptrdiff_t(pos - self->base) * vocab);
    }
};

int argmax(std::span<const float> x) {
    return int(std::max_element(x.begin(), x.end()) - x.begin());
}

// T tokens in one prefill block unless the caller chose buckets.
SessionOptions session_options(const VerifySettings& s, int max_seq, int prompt) {
    SessionOptions o;
    o.max_seq = std::max(max_seq, 1);
    o.prefill_buckets = s.prefill_buckets.empty() ? std::vector<int>{std::max(prompt, 1)}
                                                  : s.prefill_buckets;
    o.append_buckets = s.append_buckets.empty() ? std::vector<int>{1} : s.append_buckets;
    for (int& b : o.prefill_buckets) b = std::min(b, o.max_seq);
    for (int& b : o.append_buckets) b = std::min(b, o.max_seq);
    o.kv = s.kv;
    o.threads = s.threads;
    o.all_logits = true;
    return o;
}

void check_vocab(const Model& model, const ReferenceData& ref) {
    const int v = model_config(model).vocab;
    if (v != ref.vocab)
        throw Error(ErrorKind::input, "reference logits have vocab " + std::to_string(ref.vocab) +
                                          " but the model has vocab " + std::to_string(v));
    for (size_t i = 0; i < ref.input_ids.size(); ++i)
        if (ref.input_ids[i] < 0 || ref.input_ids[i] >= v)
            throw Error(ErrorKind::input, "reference input_ids[" + std::to_string(i) + "] = " +
                                              std::to_string(ref.input_ids[i]) +
                                              " is outside the model's vocab " + std::to_string(v));
}

std::vector<int> to_ints(const std::vector<int64_t>& v, const TensorView& t) {
    std::vector<int> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] < 0 || v[i] > INT32_MAX)
            throw Error(ErrorKind::format, t.where() + ": id " + std::to_string(v[i]) +
                                               " at index " + std::to_string(i) +
                                               " is not a valid token id");
        out.push_back(int(v[i]));
    }
    return out;
}

}  // namespace

ReferenceData read_reference(const std::filesystem::path& file) {
    SafetensorsFile f(file);
    ReferenceData r;
    const TensorView& ids = f.at("input_ids");
    const TensorView& logits = f.at("logits");
    if (ids.dtype != DType::i64 || ids.shape.size() != 1 || ids.shape[0] < 1)
        throw Error(ErrorKind::format, ids.where() + ": expected I64 [T] with T >= 1, got " +
                                           dtype_name(ids.dtype) + " " + ids.shape_string());
    if (logits.dtype != DType::f32 || logits.shape.size() != 2 || logits.shape[0] != ids.shape[0] ||
        logits.shape[1] < 1)
        throw Error(ErrorKind::format, logits.where() + ": expected F32 [" +
                                           std::to_string(ids.shape[0]) + "][V], got " +
                                           dtype_name(logits.dtype) + " " + logits.shape_string());
    r.input_ids = to_ints(read_i64(ids), ids);
    r.logits = read_f32(logits);
    r.vocab = int(logits.shape[1]);
    if (const TensorView* g = f.find("greedy_ids")) {
        if (g->dtype != DType::i64 || g->shape.size() != 1)
            throw Error(ErrorKind::format, g->where() + ": expected I64 [G], got " +
                                               dtype_name(g->dtype) + " " + g->shape_string());
        r.greedy_ids = to_ints(read_i64(*g), *g);
    }
    return r;
}

double VerifyReport::worst_peir() const {
    double w = 0;
    for (const LogitDiff& d : positions) w = std::max(w, d.peir);
    return w;
}

int VerifyReport::worst_position() const {
    int w = -1;
    for (size_t i = 0; i < positions.size(); ++i)
        if (w < 0 || positions[i].peir > positions[size_t(w)].peir) w = int(i);
    return w;
}

double VerifyReport::mean_abs() const {
    double s = 0;
    for (const LogitDiff& d : positions) s += d.mean_abs;
    return positions.empty() ? 0.0 : s / double(positions.size());
}

double VerifyReport::max_abs() const {
    double m = 0;
    for (const LogitDiff& d : positions) m = std::max(m, d.max_abs);
    return m;
}

double VerifyReport::top1_fraction() const {
    int n = 0;
    for (const LogitDiff& d : positions) n += d.top1();
    return positions.empty() ? 1.0 : double(n) / double(positions.size());
}

VerifyReport verify_reference(std::shared_ptr<const Model> model, const ReferenceData& ref,
                              const VerifySettings& settings) {
    if (!model) throw Error(ErrorKind::config, "verify needs a model");
    check_vocab(*model, ref);
    const int T = ref.length(), G = int(ref.greedy_ids.size());
    Session s(model, session_options(settings, T + std::max(G - 1, 0), T));

    std::vector<float> engine(size_t(T) * size_t(ref.vocab));
    RowCollector rc{&engine, 0};
    s.prefill(ref.input_ids, {RowCollector::sink, &rc});

    VerifyReport rep;
    rep.positions.reserve(size_t(T));
    for (int t = 0; t < T; ++t)
        rep.positions.push_back(compare_logits(
            std::span<const float>(engine.data() + size_t(t) * size_t(ref.vocab), size_t(ref.vocab)),
            ref.row(t)));

    GreedyCheck& g = rep.greedy;
    std::span<const float> logits = s.logits();
    for (int i = 0; i < G; ++i) {
        if (i > 0) logits = s.decode(ref.greedy_ids[size_t(i - 1)]);
        const int id = argmax(logits);
        g.engine_ids.push_back(id);
        ++g.compared;
        if (id == ref.greedy_ids[size_t(i)])
            ++g.matched;
        else if (g.first_mismatch < 0)
            g.first_mismatch = i;
    }
    return rep;
}

double MultiTurnReport::worst_peir() const {
    double w = 0;
    for (const MultiTurnRow& r : rows) w = std::max(w, r.diff.peir);
    return w;
}

double MultiTurnReport::top1_fraction() const {
    int n = 0;
    for (const MultiTurnRow& r : rows) n += r.diff.top1();
    return rows.empty() ? 1.0 : double(n) / double(rows.size());
}

MultiTurnReport verify_multi_turn(std::shared_ptr<const Model> model, const ReferenceData& ref,
                                  const VerifySettings& settings, const MultiTurnOptions& mt) {
    if (!model) throw Error(ErrorKind::config, "verify needs a model");
    check_vocab(*model, ref);
    const int T = ref.length();
    MultiTurnReport rep;
    rep.turn1 = mt.turn1 < 0 ? std::max(T / 3, 1) : mt.turn1;
    rep.decode = mt.decode;
    rep.turn2 = mt.turn2 < 0 ? T - rep.turn1 - 2 * rep.decode : mt.turn2;
    if (rep.turn1 < 1 || rep.decode < 0 || rep.turn2 < 1 || mt.append_bucket < 1 ||
        rep.turn1 + 2 * rep.decode + rep.turn2 > T)
        throw Error(ErrorKind::config,
                    "multi-turn split turn1=" + std::to_string(rep.turn1) + " decode=" +
                        std::to_string(rep.decode) + " turn2=" + std::to_string(rep.turn2) +
                        " append bucket=" + std::to_string(mt.append_bucket) +
                        " does not fit the reference's " + std::to_string(T) +
                        " tokens (need turn1, turn2, bucket >= 1 and turn1 + 2*decode + turn2 <= T)");

    VerifySettings vs = settings;
    vs.append_buckets = {mt.append_bucket};
    Session s(model, session_options(vs, T, rep.turn1));
    Session loop(model, session_options(vs, T, rep.turn1));
    const int V = ref.vocab;
    const std::span<const int> ids(ref.input_ids);

    std::vector<float> rows;
    auto add = [&](const char* phase, int pos, std::span<const float> x) {
        rep.rows.push_back({phase, pos, compare_logits(x, ref.row(pos))});
    };
    auto row_of = [&](int i) {
        return std::span<const float>(rows.data() + size_t(i) * size_t(V), size_t(V));
    };

    RowCollector rc{&rows, 0};
    s.prefill(ids.subspan(0, size_t(rep.turn1)), {RowCollector::sink, &rc});
    loop.prefill(ids.subspan(0, size_t(rep.turn1)));
    for (int p = 0; p < rep.turn1; ++p) add("prefill", p, row_of(p));

    int p = rep.turn1;
    for (int i = 0; i < rep.decode; ++i, ++p) {
        add("decode1", p, s.decode(ids[size_t(p)]));
        loop.decode(ids[size_t(p)]);
    }

    rows.clear();
    rc.base = p;
    s.append(ids.subspan(size_t(p), size_t(rep.turn2)), {RowCollector::sink, &rc});
    rep.append_plan.assign(s.last_plan().begin(), s.last_plan().end());
    for (int i = 0; i < rep.turn2; ++i) {
        const std::span<const float> a = row_of(i);
        add("append", p + i, a);
        const LogitDiff d = compare_logits(a, loop.decode(ids[size_t(p + i)]));
        if (rep.append_vs_decode_worst_pos < 0 || d.peir > rep.append_vs_decode_peir) {
            rep.append_vs_decode_peir = d.peir;
            rep.append_vs_decode_worst_pos = p + i;
        }
    }
    p += rep.turn2;
    for (int i = 0; i < rep.decode; ++i, ++p) add("decode2", p, s.decode(ids[size_t(p)]));
    return rep;
}

namespace {

struct DumpCollector {
    struct Entry {
        DumpedTensor info;
        std::vector<float> data;  // [rows][cols]
    };
    std::vector<Entry> entries;  // in order of first appearance
    std::map<std::pair<std::string, int>, size_t> index;
    std::string error;

    static void fn(void* ctx, const char* name, int layer, const float* data, int rows, int cols,
                   size_t ld) {
        auto* self = static_cast<DumpCollector*>(ctx);
        const auto key = std::make_pair(std::string(name), layer);
        auto it = self->index.find(key);
        if (it == self->index.end()) {
            it = self->index.emplace(key, self->entries.size()).first;
            Entry e;
            e.info.name = name;
            e.info.layer = layer;
            e.info.cols = cols;
            e.info.file = layer < 0 ? std::string(name) + ".f32"
                                    : std::string(name) + "." + std::to_string(layer) + ".f32";
            self->entries.push_back(std::move(e));
        }
        Entry& e = self->entries[it->second];
        if (e.info.cols != cols) {
            // Cannot throw through forward(); reported after the call.
            if (self->error.empty())
                self->error = std::string("intermediate '") + name + "' of layer " +
                              std::to_string(layer) + " changed width from " +
                              std::to_string(e.info.cols) + " to " + std::to_string(cols);
            return;
        }
        for (int r = 0; r < rows; ++r)
            e.data.insert(e.data.end(), data + size_t(r) * ld, data + size_t(r) * ld + size_t(cols));
        e.info.rows += rows;
    }
};

void discard_rows(void*, int, const float*, int, int) {}

}  // namespace

std::vector<DumpedTensor> dump_intermediates(std::shared_ptr<const Model> model,
                                             std::span<const int> tokens,
                                             const std::filesystem::path& dir,
                                             const VerifySettings& settings) {
    if (!model) throw Error(ErrorKind::config, "dump needs a model");
    const int T = int(tokens.size());
    Session s(model, session_options(settings, T, T));
    DumpCollector dc;
    s.set_dump(DumpCollector::fn, &dc);
    // A sink asks for every row's logits, so final_norm and logits cover all rows.
    s.prefill(tokens, {discard_rows, nullptr});
    s.set_dump(nullptr, nullptr);
    if (!dc.error.empty()) throw Error(ErrorKind::model, dc.error);

    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(ErrorKind::io, "cannot create dump directory " + dir.string() + ": " + ec.message());
    nlohmann::json index = nlohmann::json::array();
    std::vector<DumpedTensor> out;
    for (const DumpCollector::Entry& e : dc.entries) {
        const std::filesystem::path path = dir / e.info.file;
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        // float32 is little-endian on every target staticlm builds for (x86-64).
        f.write(reinterpret_cast<const char*>(e.data.data()),
                std::streamsize(e.data.size() * sizeof(float)));
        if (!f) throw Error(ErrorKind::io, "cannot write " + path.string());
        index.push_back({{"name", e.info.name}, {"layer", e.info.layer},
                         {"shape", {e.info.rows, e.info.cols}}, {"file", e.info.file}});
        out.push_back(e.info);
    }
    nlohmann::json doc = {{"producer", "staticlm"},
                          {"weights", model_weights_label(*model)},
                          {"input_ids", std::vector<int>(tokens.begin(), tokens.end())},
                          {"tensors", index}};
    const std::filesystem::path ipath = dir / "index.json";
    std::ofstream f(ipath, std::ios::trunc);
    f << doc.dump(1) << "\n";
    if (!f) throw Error(ErrorKind::io, "cannot write " + ipath.string());
    return out;
}

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

namespace {

struct NllSink {
    std::span<const int> window;  // the window's tokens; position p is window[p]
    double total = 0;
    int scored = 0;
    static void fn(void* ctx, int pos, const float* rows, int t, int vocab) {
        auto* self = static_cast<NllSink*>(ctx);
        for (int i = 0; i < t; ++i) {
            const int p = pos + i;
            if (p + 1 >= int(self->window.size())) break;  // the last row predicts nothing here
            const float* x = rows + size_t(i) * size_t(vocab);
            double m = x[0];
            for (int j = 1; j < vocab; ++j) m = std::max(m, double(x[j]));
            double sum = 0;
            for (int j = 0; j < vocab; ++j) sum += std::exp(double(x[j]) - m);
            const double logp = double(x[self->window[size_t(p + 1)]]) - m - std::log(sum);
            self->total -= logp;
            ++self->scored;
        }
    }
};

}  // namespace

PerplexityResult perplexity(std::shared_ptr<const Model> model, std::span<const int> tokens,
                            int ctx, const VerifySettings& settings) {
    if (!model) throw Error(ErrorKind::config, "perplexity needs a model");
    if (ctx < 2)
        throw Error(ErrorKind::config, "perplexity window --ctx must be >= 2, got " + std::to_string(ctx));
    if (tokens.size() < 2)
        throw Error(ErrorKind::input, "perplexity needs at least 2 tokens, got " +
                                          std::to_string(tokens.size()));
    Session s(model, session_options(settings, ctx, ctx));
    PerplexityResult r;
    r.tokens = int(tokens.size());
    for (size_t start = 0; start + 1 < tokens.size(); start += size_t(ctx)) {
        const std::span<const int> w = tokens.subspan(start, std::min(size_t(ctx), tokens.size() - start));
        NllSink sink{w};
        s.prefill(w, {NllSink::fn, &sink});
        r.total_nll += sink.total;
        r.scored += sink.scored;
        ++r.windows;
    }
    return r;
}

}  // namespace staticlm
