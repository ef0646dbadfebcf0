// The staticlm command line: generate, chat, info, tokenize (and the measuring
// tools of tools/measure_cmd.cpp). Uses only the public headers. Exit codes: 0 ok,
// 1 runtime error (one line on stderr), 2 usage error.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "cli_args.hpp"
#include "commands.hpp"

namespace staticlm::cli {

void print_usage();

namespace {

constexpr const char* kUsage =
    "usage: staticlm <command> [flags]\n"
    "commands:\n"
    "  generate  --model DIR|FILE.gguf [--prompt TEXT | --prompt-file F] [--n-predict N] [--echo]\n"
    "  chat      --model DIR [--system TEXT]   (one user turn per line when stdin is not a terminal)\n"
    "  info      --model DIR | --synthetic NAME\n"
    "  tokenize  --model DIR [--add-special] TEXT\n"
    "  bench     [--model DIR | --synthetic NAME] [--threads N[,N...]] [--pp N] [--tg N] [--reps R] [--json]\n"
    "  verify    --model DIR --reference FILE [--max-peir PCT] [--min-top1 F] [--min-greedy F]\n"
    "            [--summary] [--dump DIR] [--multi-turn [--turn1 A] [--decode N] [--turn2 B]\n"
    "            [--append-bucket Q] [--max-split-peir PCT]]   (exit 1 when a budget is exceeded)\n"
    "  perplexity --model DIR --file F [--ctx N]\n"
    "  (-m, -p, -n: --model, --prompt, --n-predict)\n"
    "common flags: --weights q8|f16|bf16|f32  --kv f16|f32  --threads N  --max-seq K\n"
    "  --prefill-buckets LIST  --append-buckets LIST  --temp T  --top-k K  --top-p P\n"
    "  --min-p P  --repeat-penalty R  --seed S  --stop TEXT\n";

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, "cannot read prompt file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_text(void*, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

void print_stats(const GenerateStats& s) {
    std::fprintf(stderr,
                 "\n[staticlm] prompt %d tokens, %.1f tok/s | first token %.1f ms | generated %d "
                 "tokens, %.1f tok/s\n",
                 s.prompt_tokens, s.prefill_tok_per_s(), s.first_token_seconds * 1e3,
                 s.generated_tokens, s.decode_tok_per_s());
}

int cmd_generate(const Args& a) {
    auto model = load_model_from_args(a);
    const Tokenizer* tok = model_tokenizer(*model);
    if (!tok) throw Error(ErrorKind::config, "generate needs a model with a tokenizer");
    Session session(model, session_options_from_args(a));
    std::string prompt = a.has("prompt-file") ? read_file(a.str("prompt-file")) : a.str("prompt");
    std::vector<int> ids = tok->encode(prompt, /*add_special=*/true);
    if (ids.empty()) {
        if (tok->bos_id() < 0) throw Error(ErrorKind::input, "empty prompt and no BOS token");
        ids.push_back(tok->bos_id());
    }
    if (a.has("echo")) write_text(nullptr, prompt);
    const GenerateOptions g = generate_options_from_args(a, 256);
    const GenerateResult r = generate(session, tok, ids, g, {write_text, nullptr});
    print_stats(r.stats);  // stdout holds exactly the generated text
    return 0;
}

int cmd_chat(const Args& a) {
    auto model = load_model_from_args(a);
    const Tokenizer* tok = model_tokenizer(*model);
    if (!tok) throw Error(ErrorKind::config, "chat needs a model with a tokenizer");
    Session session(model, session_options_from_args(a));
    const ChatFormat format = detect_chat_format(a.str("model"));
    ChatOptions co;
    co.system = a.str("system");
    if (a.has("date")) co.date = a.str("date");
    Chat chat(session, *tok, format, co);
    const GenerateOptions g = generate_options_from_args(a, 512);
    const bool interactive = isatty(0);
    std::string line;
    while (true) {
        if (interactive) std::fputs("> ", stderr);
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        const GenerateResult r = chat.reply(line, g, {write_text, nullptr});
        std::fputs("\n", stdout);
        std::fflush(stdout);
        if (interactive) print_stats(r.stats);
    }
    return 0;
}

int cmd_tokenize(const Args& a) {
    // Only the tokenizer files are read: a directory with just tokenizer.json works.
    if (!a.has("model")) throw UsageError("--model DIR is required");
    const std::unique_ptr<Tokenizer> owned = load_model_tokenizer(a.str("model"), a.has("prefer-json"));
    const Tokenizer* tok = owned.get();
    std::string text;
    for (size_t i = 0; i < a.positional().size(); ++i) text += (i ? " " : "") + a.positional()[i];
    const std::vector<int> ids = tok->encode(text, a.has("add-special"));
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    return 0;
}

int cmd_info(const Args& a) {
    if (a.has("model") && a.str("model").ends_with(".gguf")) std::printf("%s\n", gguf_file_summary(a.str("model")).c_str());
    auto model = load_model_from_args(a);
    const ModelConfig& c = model_config(*model);
    const SessionOptions so = session_options_from_args(a);
    Session session(model, so);
    std::printf("model        %s (%s)\n", c.architecture.c_str(), c.family.c_str());
    std::printf("hidden       %d\nlayers       %d\nvocab        %d\n", c.hidden, c.n_layers, c.vocab);
    if (!c.layers.empty()) {
        const LayerConfig& l = c.layers[0];
        std::printf("heads        %d (kv %d, head_dim %d)\nffn          %d\n", l.n_heads,
                    l.n_kv_heads, l.head_dim, l.ffn_dim);
    }
    int sliding = 0, shared = 0;
    for (size_t i = 0; i < c.layers.size(); ++i) {
        sliding += c.layers[i].attention == AttentionType::sliding;
        shared += c.layers[i].kv_source != int(i);
    }
    if (sliding) std::printf("sliding      %d layers\n", sliding);
    if (shared) std::printf("kv-shared    %d layers\n", shared);
    if (c.per_layer_dim) std::printf("per-layer    %d\n", c.per_layer_dim);
    std::printf("weights      %s, %.1f MiB\n", weight_type_name(model_weight_type(*model)),
                model_weight_bytes(*model) / 1048576.0);
    std::printf("load         %.3f s\n", model_load_seconds(*model));
    std::printf("kv cache     %s, max_seq %d, %.1f MiB (%.1f KiB per token)\n",
                kv_type_name(so.kv), so.max_seq, session.cache_bytes() / 1048576.0,
                session.cache_bytes_per_token() / 1024.0);
    std::printf("workspace    %.1f MiB\n", session.workspace_bytes() / 1048576.0);
    std::printf("target       %s\nthreads      %d\n", kernel_target_name().c_str(), session.threads());
    if (const Tokenizer* tok = model_tokenizer(*model))
        std::printf("tokenizer    vocab %d, bos %d, eos %d\n", tok->vocab_size(), tok->bos_id(),
                    tok->eos_id());
    return 0;
}

}  // namespace

void print_usage() { std::fputs(kUsage, stderr); }

int run(int argc, char** argv) {
    if (argc < 2) {
        print_usage();
        return 2;
    }
    const std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (cmd == "verify") return cmd_verify(argc, argv);
    if (cmd == "perplexity") return cmd_perplexity(argc, argv);
    const Args a(argc, argv, 2, common_flags(), common_switches());
    if (cmd == "generate") return cmd_generate(a);
    if (cmd == "chat") return cmd_chat(a);
    if (cmd == "info") return cmd_info(a);
    if (cmd == "tokenize") return cmd_tokenize(a);
    if (cmd == "bench") return cmd_bench(a);
    throw UsageError("unknown command '" + cmd + "'");
}

}  // namespace staticlm::cli

int main(int argc, char** argv) {
    try {
        return staticlm::cli::run(argc, argv);
    } catch (const staticlm::cli::UsageError& e) {
        std::fprintf(stderr, "staticlm: %s\n", e.what());
        staticlm::cli::print_usage();
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "staticlm: error: %s\n", e.what());
        return 1;
    }
}
