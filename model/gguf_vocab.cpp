// The tokenizer.ggml.* keys of a GGUF file read into a GgufVocab (views into
// the mapping) and handed to the tokenizer library.
#include "model/gguf.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer_gguf.hpp"

namespace staticlm {
namespace {

int optional_id(const GgufFile& f, const char* key) {
    return f.find(key) ? int(f.get_uint(key, uint64_t(INT32_MAX))) : -1;
}

int optional_bool(const GgufFile& f, const char* key) { return f.find(key) ? int(f.get_bool(key)) : -1; }

}  // namespace

GgufVocab read_gguf_vocab(const GgufFile& f) {
    GgufVocab v;
    v.source = f.path().string();
    v.model = std::string(f.get_string("tokenizer.ggml.model"));
    if (f.find("tokenizer.ggml.pre")) v.pre = std::string(f.get_string("tokenizer.ggml.pre"));
    v.tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (f.find("tokenizer.ggml.scores")) v.scores = f.get_f32_array("tokenizer.ggml.scores");
    if (f.find("tokenizer.ggml.token_type")) {
        const std::vector<int64_t> types = f.get_int_array("tokenizer.ggml.token_type");
        v.token_types.reserve(types.size());
        for (size_t i = 0; i < types.size(); ++i) {
            if (types[i] < INT32_MIN || types[i] > INT32_MAX)
                throw Error(ErrorKind::format, f.key_where("tokenizer.ggml.token_type") + ": element " +
                                                   std::to_string(i) + " = " + std::to_string(types[i]) +
                                                   " is out of range");
            v.token_types.push_back(int32_t(types[i]));
        }
    }
    if (f.find("tokenizer.ggml.merges")) {
        v.merges = f.get_string_array("tokenizer.ggml.merges");
        v.has_merges = true;
    }
    v.bos_id = optional_id(f, "tokenizer.ggml.bos_token_id");
    v.eos_id = optional_id(f, "tokenizer.ggml.eos_token_id");
    v.unk_id = optional_id(f, "tokenizer.ggml.unknown_token_id");
    v.pad_id = optional_id(f, "tokenizer.ggml.padding_token_id");
    v.add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token");
    v.add_eos = optional_bool(f, "tokenizer.ggml.add_eos_token");
    v.add_space_prefix = optional_bool(f, "tokenizer.ggml.add_space_prefix");
    return v;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& f) { return load_gguf_tokenizer(read_gguf_vocab(f)); }

}  // namespace staticlm
