// A chat template as data: the texts that open a conversation and wrap each
// turn, with {content}, {date} and {system} placeholders. Model families declare
// theirs (model/families/*.cpp); the renderer in runtime/chat.cpp is the same
// for all of them. See docs/FAMILIES.md.
#pragma once

#include <array>
#include <string_view>

namespace staticlm {

struct ChatTemplate {
    const char* name = "plain";    // "llama3", "gemma4": chat_format_name()
    // A substring that identifies this template in a checkpoint's own template
    // text (chat_template.jinja / tokenizer_config.json); empty: never detected.
    std::string_view marker{};
    std::string_view bos{};          // opens every conversation ("<bos>")
    bool bos_from_tokenizer = false;  // no BOS text: the chat adds the tokenizer's BOS id (add_bos_token)
    std::string_view system{};       // a system turn, "{content}" = the system text, "{date}" = ChatOptions::date
    bool always_system = false;    // render the system turn even when there is no system text
    // The system text is no turn of its own: `system` (expanded) replaces {system}
    // in the first user turn (Gemma 3); {system} is empty in every other turn.
    bool system_in_first_user = false;
    std::string_view default_system{};  // the system text of an always_system turn when none is given (Qwen2.5)
    std::string_view user{};         // a whole user turn
    std::string_view user_separator{};  // before a user turn that follows another message
    std::string_view assistant{};    // what opens an assistant turn of the history
    std::string_view end_of_turn{};  // what closes an assistant turn (the token the model ends its reply with)
    std::string_view after_turn{};   // text after end_of_turn
    std::string_view generation_prompt{};  // what add_generation_prompt appends
    // Reasoning models (Qwen3): what follows the generation prompt when
    // ChatOptions::thinking is false (an empty thought block), and the tags
    // around a reply's reasoning. With think_close set, assistant turns of the
    // history before the last user turn are rendered without their reasoning.
    std::string_view no_thinking{};
    std::string_view think_open{};
    std::string_view think_close{};
    bool trim = false;             // strip surrounding whitespace from every content (Jinja's | trim)
    // Token strings that end a reply besides the model's EOS ids (unused slots empty).
    std::array<std::string_view, 4> stop_tokens{};
};

}  // namespace staticlm
