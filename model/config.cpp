// Which family reads a config.json, the parts every family shares (tying,
// generation_config.json and tokenizer_config.json special tokens, checks of
// the result), and the RoPE helpers. Family-specific keys live in
// model/families/. Defaults and key names follow transformers 5.24.
#include "model/config.hpp"

#include <cmath>
#include <unordered_set>

#include "base/file.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;
using detail::json;

// Appends the ids of `more` not yet in `ids`, in order (linear: a set of what is there).
void add_unique(std::vector<int>& ids, const std::vector<int>& more) {
    std::unordered_set<int> seen(ids.begin(), ids.end());
    for (int id : more)
        if (seen.insert(id).second) ids.push_back(id);
}

// A JSON file of the model directory: regular, at most kMaxConfigFileBytes
// (model_file() has checked it resolves inside the directory).
std::string read_text(const std::filesystem::path& path) {
    return File(path).read_all(kMaxConfigFileBytes, "a JSON config");
}

bool contains(const json& j, const char* key, std::string_view value) {
    if (!j.contains(key)) return false;
    const json& v = j[key];
    if (v.is_string()) return v.get<std::string>() == value;
    if (v.is_array())
        for (const json& e : v)
            if (e.is_string() && e.get<std::string>() == value) return true;
    return false;
}

// Checks every family's result must pass: values the graph uses as floats are
// finite (the readers check each key; this catches what they derive).
void check_derived(const ModelConfig& c, const std::string& file) {
    for (size_t il = 0; il < c.layers.size(); ++il)
        for (const std::vector<float>* set : {&c.layers[il].inv_freq, &c.layers[il].inv_freq_long})
            for (float f : *set)
                if (!std::isfinite(f) || f < 0)
                    throw Error(ErrorKind::format, file + ": the RoPE parameters give layer " + std::to_string(il) +
                                                       " a non-finite or negative frequency");
}

}  // namespace

std::vector<float> rope_inv_freq_default(int head_dim, double theta) {
    // fp32 like transformers: 1 / theta ** (float(2i) / d).
    std::vector<float> inv(size_t(head_dim / 2));
    for (int i = 0; i < head_dim / 2; ++i) {
        const float e = float(2 * i) / float(head_dim);
        inv[size_t(i)] = 1.0f / std::pow(float(theta), e);
    }
    return inv;
}

void rope_apply_llama3(std::vector<float>& inv_freq, double factor, double low_freq_factor,
                       double high_freq_factor, double original_max_position) {
    const double low_wavelen = original_max_position / low_freq_factor;
    const double high_wavelen = original_max_position / high_freq_factor;
    for (float& f : inv_freq) {
        const double wavelen = 2.0 * M_PI / double(f);
        if (wavelen < high_wavelen) continue;
        if (wavelen > low_wavelen) {
            f = float(double(f) / factor);
            continue;
        }
        const double s = (original_max_position / wavelen - low_freq_factor) /
                         (high_freq_factor - low_freq_factor);
        f = float((1.0 - s) * double(f) / factor + s * double(f));
    }
}

CheckpointConfig parse_checkpoint_config(const std::string& config_json, const std::string& file_name) {
    const json j = detail::parse_json_object(config_json, file_name);
    std::string arch;
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
        arch = j["architectures"][0].get<std::string>();
    const std::string model_type =
        j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";

    std::string supported;
    for (const FamilyDescriptor* family : families())
        for (const ConfigForm& form : family->forms) {
            supported += (supported.empty() ? "" : ", ") + std::string(form.architecture);
            if (!contains(j, "architectures", form.architecture) && !(arch.empty() && model_type == form.model_type))
                continue;
            const ConfigReader top{j, file_name, ""};
            if (form.nested && (!j.contains("text_config") || !j["text_config"].is_object()))
                throw Error(ErrorKind::format, file_name + ": 'text_config' is missing");
            const ConfigReader decoder{form.nested ? j["text_config"] : j, file_name, form.nested ? "text_config." : ""};
            CheckpointConfig out{family->parse(decoder, top), family};
            ModelConfig& c = out.config;
            c.architecture = arch.empty() ? std::string(form.architecture) : arch;
            c.family = std::string(family->name);
            // As transformers: the class's own config decides (the top level).
            c.tie_embeddings = top.boolean("tie_word_embeddings", form.tie_default);
            check_derived(c, file_name);
            return out;
        }
    throw Error(ErrorKind::unsupported,
                file_name + ": unsupported architecture '" + (arch.empty() ? "(none)" : arch) + "' / model_type '" +
                    (model_type.empty() ? "(none)" : model_type) + "' (supported: " + supported + ")");
}

ModelConfig parse_model_config(const std::string& config_json, const std::string& file_name) {
    return parse_checkpoint_config(config_json, file_name).config;
}

// The sampling settings of generation_config.json (absent keys stay unset),
// range-checked as the floats they are used as.
GenerationConfig read_generation_settings(const ConfigReader& r) {
    using detail::Range;
    GenerationConfig g;
    auto real = [&](const char* key, Range range) -> std::optional<float> {
        if (!r.has(key)) return std::nullopt;
        return r.real(key, std::nullopt, range);
    };
    if (r.has("do_sample")) g.do_sample = r.boolean("do_sample", true);
    g.temperature = real("temperature", {0.0, 1e6});
    g.top_p = real("top_p", {0.0, 1.0, true, false});
    g.min_p = real("min_p", {0.0, 1.0});
    g.repetition_penalty = real("repetition_penalty", {1e-3, 1e3});
    if (r.has("top_k")) g.top_k = int(r.integer("top_k", 0, 0, detail::kMaxVocab));
    return g;
}

CheckpointConfig read_checkpoint_config(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(dir)) {
        const std::string ext = dir.extension().string();
        if (fs::is_regular_file(dir) && (ext == ".safetensors" || ext == ".json"))
            throw Error(ErrorKind::io, dir.string() + ": is a file; give the model directory that holds it (" +
                                           (dir.has_parent_path() ? dir.parent_path().string() : std::string(".")) +
                                           ", with config.json and the tokenizer files)");
        if (fs::exists(dir))
            throw Error(ErrorKind::io, dir.string() + ": not a model directory (give the directory that holds "
                                           "config.json and model.safetensors, or a llama2.c .bin file)");
        throw Error(ErrorKind::io, dir.string() + ": model directory not found");
    }
    const std::optional<fs::path> config_path = model_file(dir, "config.json");
    if (!config_path) throw Error(ErrorKind::io, (dir / "config.json").string() + ": not found");
    CheckpointConfig out = parse_checkpoint_config(read_text(*config_path), config_path->string());
    ModelConfig& c = out.config;

    if (const std::optional<fs::path> gen_path = model_file(dir, "generation_config.json")) {
        const std::string name = gen_path->string();
        const json g = detail::parse_json_object(read_text(*gen_path), name);
        const ConfigReader r{g, name, ""};
        add_unique(c.eos_ids, r.id_list("eos_token_id"));
        if (c.bos_id < 0) {
            const std::vector<int> bos = r.id_list("bos_token_id");
            if (!bos.empty()) c.bos_id = bos[0];
        }
        c.generation = read_generation_settings(r);
    }
    if (const std::optional<fs::path> tok_path = model_file(dir, "tokenizer_config.json")) {
        const std::string name = tok_path->string();
        const json tc = detail::parse_json_object(read_text(*tok_path), name);
        const ConfigReader r{tc, name, ""};
        c.add_bos = r.boolean("add_bos_token", c.add_bos);
    }
    return out;
}

ModelConfig read_model_config(const std::filesystem::path& dir) { return read_checkpoint_config(dir).config; }

}  // namespace staticlm
