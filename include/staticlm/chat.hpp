// Chat formats (the chat templates of the model families: Llama 3, Gemma 4,
// and plain text) and a multi-turn chat that keeps one session: each turn
// appends only the tokens not yet in the cache.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/chat_template.hpp"
#include "staticlm/generate.hpp"

namespace staticlm {

// A chat template (staticlm/chat_template.hpp). The built-in ones have names
// here; every family's template is found by detect_chat_format and
// chat_format_by_name.
class ChatFormat {
public:
    static const ChatFormat plain, llama3, gemma4;

    constexpr ChatFormat() = default;  // plain
    constexpr explicit ChatFormat(const ChatTemplate& t) : template_(&t) {}
    const ChatTemplate& chat_template() const;
    bool operator==(const ChatFormat& other) const { return &chat_template() == &other.chat_template(); }

private:
    const ChatTemplate* template_ = nullptr;  // null: plain
};

const char* chat_format_name(ChatFormat format);
// The format of that name ("plain", "llama3", "gemma4", ...); Error(config) listing them otherwise.
ChatFormat chat_format_by_name(std::string_view name);

struct ChatMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

struct ChatOptions {
    std::string system;               // empty: no system text (Llama 3 still has its block)
    std::string date = "26 Jul 2024";  // Llama 3 "Today Date" (explicit for reproducibility)
    bool thinking = true;              // enable_thinking: false opens replies with an empty thought block (Qwen3)
};

// The format named by a checkpoint's chat template (tokenizer_config.json
// "chat_template" or chat_template.jinja; a GGUF file's tokenizer.chat_template;
// plain for a llama2.c file, which has none): the first family whose template
// marker it contains; plain when there is none or no family's marker matches.
// A template file that cannot be read (not a regular file, a link out of the
// directory, more than 64 MiB, invalid JSON) is an Error naming it.
ChatFormat detect_chat_format(const std::filesystem::path& model_dir);
ChatFormat chat_format_from_template(std::string_view template_text);

// `text` without the reasoning block that a reasoning model's reply opens with
// (think_open after white space, through the first think_close, and the
// newlines after it); a reply whose block never closed is all reasoning (empty
// result). Unchanged for templates without thinking tags and for a reply that
// does not open with think_open (a close tag later in an answer is text).
std::string strip_thinking(ChatFormat format, std::string_view text);

// The whole conversation as text, as apply_chat_template(add_generation_prompt) renders it.
std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options, bool add_generation_prompt);

class Chat {
public:
    Chat(Session& session, const Tokenizer& tokenizer, ChatFormat format, ChatOptions options);
    // Renders the user turn, appends what the cache lacks, generates the reply.
    // A reply that throws (an abort of the session included) rewinds the
    // session to where the turn began: the conversation is as before it.
    GenerateResult reply(std::string_view user, const GenerateOptions& options, TextSink sink = {});
    const std::vector<ChatMessage>& history() const { return history_; }
    // Ids that the cache holds (the session's positions 0 .. pos-1).
    const std::vector<int>& cached() const { return cached_; }

private:
    std::vector<int> turn_ids(std::string_view user) const;

    Session& session_;
    const Tokenizer& tokenizer_;
    ChatFormat format_;
    ChatOptions options_;
    std::vector<ChatMessage> history_;
    std::vector<int> cached_;
    int pending_ = -1;       // last generated token, not yet in the cache
    bool pending_ends_turn_ = false;
};

}  // namespace staticlm
