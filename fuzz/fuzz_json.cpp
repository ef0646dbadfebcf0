// libFuzzer target, structure-aware: every JSON reader of staticlm behind one
// input (byte 0 picks it: config.json, tokenizer.json, a safetensors header,
// generation_config/tokenizer_config/index in a model directory, the chat
// template lookup), with a custom mutator that parses the JSON and changes its
// shape — wraps a random subtree in up to 100000 levels of arrays or objects,
// unwraps one, retypes a value, duplicates or deletes a member, renames a key
// to one the readers look for — so that nesting depth and wrong types are
// explored, not only bytes. A quarter of the mutations are libFuzzer's own.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "base/json.hpp"
#include "fuzz/fuzz_common.hpp"
#include "model/config.hpp"
#include "model/safetensors.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer.hpp"

using nlohmann::json;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

constexpr int kReaders = 5;

const char* const kKeys[] = {"type",
                             "normalizers",
                             "pretokenizers",
                             "decoders",
                             "processors",
                             "model",
                             "vocab",
                             "merges",
                             "normalizer",
                             "pre_tokenizer",
                             "decoder",
                             "post_processor",
                             "added_tokens",
                             "content",
                             "pattern",
                             "String",
                             "Regex",
                             "behavior",
                             "replacement",
                             "special_tokens",
                             "single",
                             "ids",
                             "id",
                             "dtype",
                             "shape",
                             "data_offsets",
                             "__metadata__",
                             "weight_map",
                             "eos_token_id",
                             "bos_token_id",
                             "hidden_size",
                             "num_hidden_layers",
                             "text_config",
                             "architectures",
                             "rope_scaling",
                             "chat_template",
                             "add_bos_token",
                             "bos_token"};

json random_scalar(std::mt19937& rng) {
    switch (rng() % 12) {
        case 0:
            return 0;
        case 1:
            return -1;
        case 2:
            return 1e308;
        case 3:
            return uint64_t(18446744073709551615ull);
        case 4:
            return int64_t(INT64_MIN);
        case 5:
            return 3.5;
        case 6:
            return "";
        case 7:
            return std::string(rng() % 4096, 'x');
        case 8:
            return true;
        case 9:
            return nullptr;
        case 10:
            return json::array();
        default:
            return json::object();
    }
}

// A random node of `j` (the root included), by a random walk.
json* random_node(json& j, std::mt19937& rng, json** parent = nullptr) {
    json* node = &j;
    json* up = nullptr;
    while ((node->is_object() || node->is_array()) && !node->empty() && rng() % 3 != 0) {
        const size_t k = rng() % node->size();
        up = node;
        if (node->is_array()) {
            node = &(*node)[k];
        } else {
            auto it = node->begin();
            std::advance(it, static_cast<std::ptrdiff_t>(k));
            node = &it.value();
        }
    }
    if (parent) *parent = up;
    return node;
}

size_t nesting(std::mt19937& rng) {
    static const size_t kDepths[] = {1, 2, 3, 30, 63, 64, 65, 66, 200, 1000, 5000, 100000};
    return kDepths[rng() % (sizeof kDepths / sizeof kDepths[0])];
}

// The structural mutation of one parsed document; "" when it does not apply.
std::string mutate_json(json j, std::mt19937& rng) {
    json* parent = nullptr;
    json* node = random_node(j, rng, &parent);
    switch (rng() % 6) {
        case 0: {  // wrap the node in n levels (text-level: a deep DOM would itself recurse)
            const std::string marker = "\x01staticlm-fuzz\x01";
            const std::string inner = node->dump();
            *node = marker;
            std::string text = j.dump();
            const std::string quoted = json(marker).dump();
            const size_t at = text.find(quoted);
            if (at == std::string::npos) return "";
            const size_t n = nesting(rng);
            const bool objects = rng() % 2;
            std::string open, close;
            open.reserve(n * 6);
            for (size_t i = 0; i < n; ++i) open += objects ? "{\"a\":" : "[";
            close.assign(n, objects ? '}' : ']');
            return text.substr(0, at) + open + inner + close + text.substr(at + quoted.size());
        }
        case 1:  // unwrap: a container becomes one of its children
            if ((node->is_object() || node->is_array()) && !node->empty()) {
                json child =
                    node->is_array() ? (*node)[rng() % node->size()] : node->begin().value();
                *node = std::move(child);
            }
            break;
        case 2:
            *node = random_scalar(rng);
            break;
        case 3:  // duplicate
            if (node->is_array() && !node->empty())
                node->push_back((*node)[rng() % node->size()]);
            else if (node->is_object() && !node->empty())
                (*node)[kKeys[rng() % std::size(kKeys)]] = node->begin().value();
            break;
        case 4:  // delete
            if (parent && parent->is_object()) {
                for (auto it = parent->begin(); it != parent->end(); ++it)
                    if (&it.value() == node) {
                        parent->erase(it);
                        break;
                    }
            } else if (parent && parent->is_array() && !parent->empty()) {
                parent->erase(parent->begin() + std::ptrdiff_t(rng() % parent->size()));
            }
            break;
        default:  // a key the readers look for
            if (node->is_object()) (*node)[kKeys[rng() % std::size(kKeys)]] = random_scalar(rng);
            break;
    }
    return j.dump();
}

void read_as(int reader, const std::string& text) {
    namespace fs = std::filesystem;
    using namespace staticlm;
    static const fs::path dir = fuzz::scratch_path("json_dir");
    static const fs::path file = fuzz::scratch_path("json_file");
    switch (reader) {
        case 0:
            (void)parse_model_config(text, "config.json");
            break;
        case 1: {
            fuzz::write_scratch(file, reinterpret_cast<const uint8_t*>(text.data()), text.size());
            const auto tok = load_tokenizer_json(file, {});
            (void)tok->encode("Hello world, a b c \xC3\xA9 <s>", true);
            break;
        }
        case 2: {
            std::string st(8, '\0');
            const uint64_t n = text.size();
            std::memcpy(st.data(), &n, 8);
            st += text;
            st += std::string(64, '\0');
            fuzz::write_scratch(file, reinterpret_cast<const uint8_t*>(st.data()), st.size());
            SafetensorsFile f(file);
            break;
        }
        case 3: {
            fs::create_directories(dir);
            static const std::string config =
                "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":8,\"num_hidden_layers\":"
                "1,"
                "\"num_attention_heads\":2,\"intermediate_size\":8,\"vocab_size\":16}";
            fuzz::write_scratch(dir / "config.json",
                                reinterpret_cast<const uint8_t*>(config.data()), config.size());
            for (const char* name : {"generation_config.json", "tokenizer_config.json",
                                     "model.safetensors.index.json"})
                fuzz::write_scratch(dir / name, reinterpret_cast<const uint8_t*>(text.data()),
                                    text.size());
            try {
                (void)read_model_config(dir);
            } catch (const Error&) {
            }
            SafetensorsSet s(dir);
            break;
        }
        default: {
            fs::create_directories(dir);
            fs::remove(dir / "chat_template.jinja");
            fuzz::write_scratch(dir / "tokenizer_config.json",
                                reinterpret_cast<const uint8_t*>(text.data()), text.size());
            (void)detect_chat_format(dir);
            break;
        }
    }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    std::mt19937 rng(seed);
    if (size < 2 || rng() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
    if (rng() % 16 == 0) data[0] = uint8_t(rng() % kReaders);
    json j;
    std::string error;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (!staticlm::try_parse_json(text, j, error)) return LLVMFuzzerMutate(data, size, max_size);
    std::string out;
    try {
        out = mutate_json(std::move(j), rng);
    } catch (const json::exception&) {
        out.clear();
    }
    if (out.empty() || out.size() + 1 > max_size) return LLVMFuzzerMutate(data, size, max_size);
    std::memcpy(data + 1, out.data(), out.size());
    return out.size() + 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        read_as(data[0] % kReaders, text);
    } catch (const staticlm::Error&) {
    }
    return 0;
}
