// TEMPORARY weak stand-in for load_tokenizer_json until the tokenizer.json
// implementation lands: model/meson.build builds it only while
// model/tokenizer_json.cpp is absent (in the static library the weak stub
// would shadow the real one). Delete it and that meson block then.
#include "model/tokenizer.hpp"

#include "staticlm/error.hpp"

namespace staticlm {

__attribute__((weak)) std::unique_ptr<Tokenizer> load_tokenizer_json(
    const std::filesystem::path& json_file, const std::filesystem::path& /*tokenizer_config*/) {
    throw Error(ErrorKind::unsupported,
                json_file.string() + ": tokenizer.json support is not built in yet");
}

}  // namespace staticlm
