// libFuzzer target: the chat-template renderer. The input is split at NUL bytes
// into: template text, system text, then alternating role/content fields.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> fields;
    size_t b = 0;
    while (b <= in.size()) {
        const size_t e = in.find('\0', b);
        const size_t end = e == std::string_view::npos ? in.size() : e;
        fields.emplace_back(in.substr(b, end - b));
        b = end + 1;
    }
    const staticlm::ChatFormat detected = staticlm::chat_format_from_template(fields[0]);
    staticlm::ChatOptions options;
    if (fields.size() > 1) options.system = fields[1];
    std::vector<staticlm::ChatMessage> messages;
    for (size_t i = 2; i + 1 < fields.size(); i += 2) messages.push_back({fields[i], fields[i + 1]});
    for (auto f : {detected, staticlm::ChatFormat::plain, staticlm::ChatFormat::llama3,
                   staticlm::ChatFormat::gemma4}) {
        for (bool gen : {false, true}) {
            try {
                (void)staticlm::render_chat(f, messages, options, gen);
            } catch (const staticlm::Error&) {
            }
        }
    }
    return 0;
}
