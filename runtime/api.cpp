// The public model API (include/staticlm/model.hpp) over model/.
#include "kernels/kernels.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/model.hpp"

namespace staticlm {

std::shared_ptr<const Model> load_model(const std::filesystem::path& dir, const LoadOptions& options) {
    return Model::load(dir, options);
}

std::string gguf_file_summary(const std::filesystem::path& file) { return gguf_summary(GgufFile(file)); }

std::unique_ptr<Tokenizer> load_model_tokenizer(const std::filesystem::path& model, bool prefer_json) {
    // Each model kind keeps its tokenizer in its own place: a GGUF file's
    // metadata, the files next to a llama2.c file, a directory's files.
    if (std::filesystem::is_regular_file(model))
        return model.extension() == ".gguf" ? load_gguf_tokenizer(GgufFile(model))
                                            : detail::load_llama2c_tokenizer(model, prefer_json);
    return load_tokenizer(model, prefer_json);
}

std::shared_ptr<const Model> synthetic_model(const std::string& name, WeightType weights,
                                             uint64_t seed, int threads, int act_bits) {
    return Model::synthetic(builtin_config(name), weights, seed, threads, act_bits);
}

std::vector<std::string> synthetic_model_names() { return builtin_config_names(); }

const ModelConfig& model_config(const Model& model) { return model.config(); }
const std::vector<std::string>& model_warnings(const Model& model) { return model.warnings(); }
const Tokenizer* model_tokenizer(const Model& model) { return model.tokenizer(); }
WeightType model_weight_type(const Model& model) { return model.weight_type(); }
size_t model_weight_bytes(const Model& model) { return model.weight_bytes(); }
bool model_native_weights(const Model& model) { return model.native_weights(); }
std::string model_weights_label(const Model& model) {
    if (!model.native_weights()) return weight_type_name(model.weight_type());
    std::string types;
    for (const WeightTypeUsage& u : model_weight_usage(model))
        types += (types.empty() ? "" : ", ") + std::string(weight_type_name(u.type));
    return "native (" + types + ")";
}
int model_act_bits(const Model& model) { return model.act_bits(); }
double model_load_seconds(const Model& model) { return model.load_seconds(); }

namespace {

// Every weight the forward pass multiplies, as the weight plan lists them.
template <class Fn>
void for_each_matmul(const Model& model, Fn&& fn) {
    for (const WeightEntry& e : model.plan())
        if (e.kind == WeightEntry::Kind::matrix && e.matmul) fn(*e.matrix);
}

}  // namespace

double model_matmul_bytes(const Model& model) {
    double n = 0;
    for_each_matmul(model, [&](const PackedMatrix& m) { n += double(m.bytes); });
    return n;
}

std::vector<WeightTypeUsage> model_weight_usage(const Model& model) {
    std::vector<WeightTypeUsage> out;
    for (WeightType t : weight_types()) {
        WeightTypeUsage u{t};
        for (const WeightEntry& e : model.plan())
            if (e.kind == WeightEntry::Kind::matrix && e.matrix->type == t) {
                ++u.matrices;
                const double w = double(e.n) * double(e.k);
                u.weights += w;
                u.bytes += double(e.matrix->bytes);
                if (!e.matmul) continue;
                const bool head = e.role == WeightRole::embed || e.role == WeightRole::lm_head;
                (head ? u.macs_per_logits_row : u.macs_per_position) += w;
            }
        if (u.matrices > 0) out.push_back(u);
    }
    return out;
}

std::string kernel_target_name() { return kernels::target_name(kernels::best_target()); }

bool matmul_uses_amx(WeightType type, int act_bits) {
    const kernels::Target t = kernels::best_target();
    if (t != kernels::Target::avx512_amx) return false;
    if (weight_type_info(type).math == WeightMath::int8 && act_bits != 8) return false;  // 16-bit: VNNI
    // The avx512_amx table is the avx512 one with some matmuls replaced.
    return kernels::table_for(t).format(type).matmul != kernels::table_for(kernels::Target::avx512).format(type).matmul;
}

}  // namespace staticlm
