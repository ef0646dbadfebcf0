// libFuzzer target: SentencePiece model loading through the project's wrapper
// (load_sentencepiece), then encoding and decoding a fixed text with whatever
// model was accepted; chunked encode_limited must give encode()'s ids.
// Input: a tokenizer.model file.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_common.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("tokenizer.model");
    staticlm::fuzz::write_scratch(path, data, size);
    try {
        auto tok = staticlm::load_sentencepiece(path, {});
        const auto ids = tok->encode("Hello, world! \xC3\xA9\xE2\x82\xAC 123 <s>", true);
        (void)tok->decode(ids);
        for (int id : ids) (void)tok->piece(id);
        (void)tok->token_id("<unk>");
        staticlm::fuzz::check_chunked_encoding(*tok);
    } catch (const staticlm::Error&) {
    }
    return 0;
}
