// Chat templates against transformers: render_chat must produce the text that
// apply_chat_template renders with the real Llama 3.1/3.2 and Gemma 4
// templates (tests/fixtures/chat/chat_cases.json, tools/fixtures/make_chat_fixtures.py),
// and the Llama 3 tokenizer.json must give the ids the Python tokenizer gave.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "tests/model/gguf_writer.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using nlohmann::json;

namespace {

std::filesystem::path chat_dir() { return test::fixtures_dir() / "chat"; }

json read_cases() {
    std::ifstream in(chat_dir() / "chat_cases.json");
    REQUIRE(in);
    json j = json::parse(in);
    REQUIRE(j["cases"].size() >= 12);
    return j;
}

std::vector<ChatMessage> messages_of(const json& c) {
    std::vector<ChatMessage> out;
    for (const json& m : c["messages"]) out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    return out;
}

// The templates the renderer implements; llama3.0 (the template in
// ../shared/data/llama3-tokenizer) has no system block and is not one of them.
bool implemented(const std::string& t, ChatFormat* f) {
    if (t == "llama3.1" || t == "llama3.2") {
        *f = ChatFormat::llama3;
        return true;
    }
    if (t == "gemma4") {
        *f = ChatFormat::gemma4;
        return true;
    }
    return false;
}

}  // namespace

TEST_CASE("render_chat matches apply_chat_template (Llama 3.1/3.2, Gemma 4)") {
    const json doc = read_cases();
    int checked = 0;
    for (const json& c : doc["cases"]) {
        ChatFormat f{};
        const std::string tmpl = c["template"].get<std::string>();
        if (!implemented(tmpl, &f)) continue;
        ChatOptions o;
        o.date = c["date"].get<std::string>();
        const std::string got = render_chat(f, messages_of(c), o, c["add_generation_prompt"].get<bool>());
        const std::string want = c["text"].get<std::string>();
        CHECK_MESSAGE(got == want, tmpl, " ", c["name"].get<std::string>(), "\n got: ", got, "\nwant: ", want);
        ++checked;
    }
    CHECK(checked == 12);
}

TEST_CASE("render_chat: a system message and ChatOptions::system give the same text") {
    ChatOptions o;
    o.system = "Be brief.";
    const std::vector<ChatMessage> with_system = {{"system", "Be brief."}, {"user", "Hi"}};
    const std::vector<ChatMessage> without = {{"user", "Hi"}};
    for (ChatFormat f : {ChatFormat::llama3, ChatFormat::gemma4})
        CHECK(render_chat(f, with_system, ChatOptions{}, true) == render_chat(f, without, o, true));
    CHECK_THROWS_AS(render_chat(ChatFormat::gemma4, {{"tool", "x"}}, ChatOptions{}, true), Error);
}

TEST_CASE("detect_chat_format reads the template files") {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "staticlm_test_chat_detect";
    std::filesystem::create_directories(dir);
    auto detect_jinja = [&](const char* file) {
        std::filesystem::copy_file(chat_dir() / file, dir / "chat_template.jinja",
                                   std::filesystem::copy_options::overwrite_existing);
        return detect_chat_format(dir);
    };
    CHECK(detect_jinja("google-gemma-4-31B-it.jinja") == ChatFormat::gemma4);
    CHECK(detect_jinja("meta-llama-Llama-3.1-8B-Instruct.jinja") == ChatFormat::llama3);
    CHECK(detect_jinja("meta-llama-Llama-3.2-3B-Instruct.jinja") == ChatFormat::llama3);
    std::filesystem::remove(dir / "chat_template.jinja");
    CHECK(detect_chat_format(dir) == ChatFormat::plain);
    std::filesystem::remove_all(dir);
    if (test::have_shared_data("chat format of llama3-tokenizer"))
        CHECK(detect_chat_format(test::shared_data() / "llama3-tokenizer") == ChatFormat::llama3);
}

TEST_CASE("Llama 3 chat texts tokenize to the ids of the Python tokenizer") {
    if (!test::have_shared_data("Llama 3 chat ids")) return;
    const std::filesystem::path dir = test::shared_data() / "llama3-tokenizer";
    const auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    const json doc = read_cases();
    int checked = 0;
    for (const json& c : doc["cases"]) {
        if (!c.contains("ids")) continue;
        const std::vector<int> want = c["ids"].get<std::vector<int>>();
        const std::vector<int> got = tok->encode(c["text"].get<std::string>(), /*add_special=*/false);
        CHECK_MESSAGE(got == want, c["template"].get<std::string>(), " ", c["name"].get<std::string>());
        ++checked;
    }
    CHECK(checked == 12);
}

TEST_CASE("a chat template is data: a Gemma 3 template renders as apply_chat_template does") {
    // The Gemma 3 template (../shared/data/gemma3-tokenizer), written as data: the
    // system text opens the first user turn. Expected texts from transformers 5.24
    // apply_chat_template with that tokenizer_config.json.
    static const ChatTemplate g3{
        .name = "gemma3-test",
        .marker = "<start_of_turn>",
        .bos = "<bos>",
        .system = "{content}\n\n",
        .system_in_first_user = true,
        .user = "<start_of_turn>user\n{system}{content}<end_of_turn>\n",
        .assistant = "<start_of_turn>model\n",
        .end_of_turn = "<end_of_turn>",
        .after_turn = "\n",
        .generation_prompt = "<start_of_turn>model\n",
        .trim = true,
        .stop_tokens = {"<end_of_turn>", "<eos>"},
    };
    const ChatFormat f(g3);
    CHECK(std::string(chat_format_name(f)) == "gemma3-test");
    const std::vector<ChatMessage> m = {{"system", " Be brief. "}, {"user", " Hi "}, {"assistant", "Hello!"}, {"user", "Bye"}};
    CHECK(render_chat(f, m, ChatOptions{}, true) ==
          "<bos><start_of_turn>user\n Be brief. \n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
          "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    CHECK(render_chat(f, {m[1]}, ChatOptions{}, true) == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    // The Gemma 3 family's own template renders the same.
    const ChatFormat family = chat_format_by_name("gemma3");
    CHECK(render_chat(family, m, ChatOptions{}, true) == render_chat(f, m, ChatOptions{}, true));
    CHECK(render_chat(family, {m[1]}, ChatOptions{}, true) == render_chat(f, {m[1]}, ChatOptions{}, true));
    CHECK(chat_format_from_template("{{ '<start_of_turn>user\\n' }}") == family);
    CHECK(chat_format_by_name("gemma4") == ChatFormat::gemma4);
    CHECK(chat_format_by_name("plain") == ChatFormat::plain);
    CHECK(ChatFormat{} == ChatFormat::plain);
    test::expect_error([] { chat_format_by_name("chatml"); }, ErrorKind::config, {"chatml", "plain, llama3, gemma3, gemma4"});
}

TEST_CASE("the chat format of a GGUF file: tokenizer.chat_template, else plain") {
    test::TempDir tmp;
    const auto path = tmp.path / "chat.gguf";
    test::write_file(path, test::tiny_gguf_model()
                               .kv_string("tokenizer.chat_template",
                                          "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n...")
                               .bytes());
    CHECK(detect_chat_format(path) == chat_format_by_name("gemma3"));
    const auto base = tmp.path / "base.gguf";
    test::write_file(base, test::tiny_gguf_model().bytes());
    CHECK(detect_chat_format(base) == ChatFormat::plain);
}
