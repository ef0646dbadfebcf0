// Shared pieces of the CLI subcommands: the flag sets, turning flags into
// load, session and generation options (defaults derived from the model), and
// reading prompt files.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "cli_args.hpp"

namespace staticlm::cli {

// Exit codes.
constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitInterrupted = 130;

// Flag groups, combined into each command's CommandSpec (commands.cpp).
std::vector<FlagSpec> model_flags();     // -m/--model
std::vector<FlagSpec> load_flags();      // --weights, -t/--threads
std::vector<FlagSpec> session_flags();   // -c/--max-seq/--ctx-size, buckets, --kv, --ring
std::vector<FlagSpec> sampling_flags();  // --temp, --top-k, --top-p, --min-p, --repeat-*, -s/--seed
std::vector<FlagSpec> generation_flags(int default_n);  // -n, --stop, --ignore-eos
const CommandSpec& command_spec(const std::string& name);  // throws UsageError for unknown names
const std::vector<std::string>& command_names();

// The one place a --weights / --kv value becomes a type.
KvType parse_kv(const std::string& value, const std::string& flag);
// --weights: a format name, or "native" (q8 here; native_weights_from_args
// says so, and it needs -m).
WeightType weight_type_from_args(const Args& a);
bool native_weights_from_args(const Args& a);
// --act-bits: 8 (default) or 16 (LoadOptions::act_bits).
int act_bits_from_args(const Args& a);
// --thinking on|off (default on): ChatOptions::thinking; UsageError otherwise.
bool thinking_from_args(const Args& a);
// --threads N: 0 (all CPUs) .. max_threads(), checked with the flag's name.
int threads_from_args(const Args& a);
void check_threads_flag(int threads, const std::string& flag);
// --model DIR (with a progress bar on a terminal) or --synthetic NAME.
std::shared_ptr<const Model> load_model_from_args(const Args& a);
// Prints the model's load warnings to stderr ("staticlm: warning: ...").
void print_model_warnings(const Model& model);
// Appends `text` as a JSON string, quotes included: quotes, backslashes and
// control bytes escaped (a token piece or a model path may hold any of them);
// other bytes as they are.
void append_json_string(std::string& s, std::string_view text);
std::string json_string(std::string_view text);
// -c / buckets / --kv / --ring / -t; max-seq defaults to min(2048, the model's
// trained context) and the buckets to default_*_buckets(max-seq). Warns on
// stderr when -c exceeds the trained context.
SessionOptions session_options_from_args(const Args& a, const ModelConfig& config);
// --spec ngram[:N] (N in 1..kMaxDraft, default kDefaultDraft): the speculation
// options; UsageError naming the value otherwise. Off without the flag.
constexpr int kDefaultDraft = 8;
SpeculationOptions speculation_from_args(const Args& a);
// Sampling: suggested_sampling(model) (generation_config.json), then the flags
// (--spec included; the session then needs all_logits: session_options_from_args sets it).
GenerateOptions generate_options_from_args(const Args& a, const ModelConfig& config, int default_max_tokens);

// Reads a text file ("-" = stdin) of at most max_bytes, refusing directories,
// devices and other non-regular files; errors name the flag and the limit.
std::string read_text_input(const std::string& path, const std::string& flag, size_t max_bytes);
constexpr size_t kMaxTextFileBytes = size_t{64} << 20;  // 64 MiB
// The most bytes of text that can encode to `tokens` tokens or fewer with this
// tokenizer: a refusal bound checked before tokenizing (4 x the longest piece
// per token, a margin for normalization).
size_t max_text_bytes(const Tokenizer& tokenizer, int tokens);

int cmd_bench(const Args& a);
int cmd_verify(const Args& a);
int cmd_perplexity(const Args& a);
int cmd_bench_batch(const Args& a);  // bench --batch LIST (tools/cli/bench_batch.cpp)
int cmd_batch(const Args& a);        // tools/cli/batch_cmd.cpp

}  // namespace staticlm::cli
