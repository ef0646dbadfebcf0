// libFuzzer target: GGUF files (GgufFile), then everything that reads from an
// accepted file: every tensor's first and last byte (a wrong range faults
// here), the dequantization of small tensors, the summary, the model facts,
// the tokenizer, which encodes and decodes a fixed text (and a long one whole
// and in chunks, which must give the same ids), and Model::load of
// the file (the families' GGUF metadata, the weight plan, conversion to q8).
// Input: a .gguf file.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_common.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("model.gguf");
    staticlm::fuzz::write_scratch(path, data, size);
    try {
        const staticlm::GgufFile file(path);
        volatile unsigned sink = 0;
        for (const staticlm::GgufTensor& t : file.tensors()) {
            if (t.bytes == 0) continue;
            sink = sink + unsigned(t.data[0]) + unsigned(t.data[t.bytes - 1]);
            if (t.numel <= 4096) {
                try {
                    sink = sink + unsigned(staticlm::gguf_read_f32(t).size());
                } catch (const staticlm::Error&) {
                }
            }
        }
        sink = sink + unsigned(staticlm::gguf_summary(file).size());
        for (const staticlm::GgufKv& kv : file.kvs()) {
            if (kv.value.type != staticlm::GgufType::array) continue;
            try {
                sink = sink + unsigned(file.get_string_array(kv.key).size());
            } catch (const staticlm::Error&) {
            }
            try {
                sink = sink + unsigned(file.get_int_array(kv.key).size());
            } catch (const staticlm::Error&) {
            }
        }
        try {
            sink = sink + unsigned(staticlm::read_gguf_model_info(file).vocab);
        } catch (const staticlm::Error&) {
        }
        try {
            staticlm::LoadOptions lo;
            lo.threads = 1;
            lo.load_tokenizer = false;
            lo.native_weights = (size & 1) != 0;  // the CLI's default for .gguf: q4/q5/q4k/q6k repacking
            sink = sink + unsigned(staticlm::Model::load(path, lo)->config().n_layers);
        } catch (const staticlm::Error&) {
        }
        auto tok = staticlm::load_gguf_tokenizer(file);
        const auto ids = tok->encode("Hello, world!  \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 123 <s> <bos>\n\t", true);
        (void)tok->decode(ids);
        for (int id : ids) (void)tok->piece(id);
        (void)tok->token_id("<unk>");
        staticlm::fuzz::check_chunked_encoding(*tok);
    } catch (const staticlm::Error&) {
    }
    return 0;
}
