// TEMPORARY weak stand-in for load_tokenizer_json until the tokenizer.json
// implementation lands (delete this file and its meson line then): it only
// lets load_tokenizer link, and says clearly that tokenizer.json is missing.
#include "model/tokenizer.hpp"

#include "staticlm/error.hpp"

namespace staticlm {

__attribute__((weak)) std::unique_ptr<Tokenizer> load_tokenizer_json(
    const std::filesystem::path& json_file, const std::filesystem::path& /*tokenizer_config*/) {
    throw Error(ErrorKind::unsupported,
                json_file.string() + ": tokenizer.json support is not built in yet");
}

}  // namespace staticlm
