// Shared pieces of the CLI subcommands: flag lists, and turning flags into
// load, session and generation options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "cli_args.hpp"

namespace staticlm::cli {

const std::vector<std::string>& common_flags();
const std::vector<std::string>& common_switches();

WeightType weight_type_from_args(const Args& a);
// --model DIR (with a progress bar on a terminal) or --synthetic NAME.
std::shared_ptr<const Model> load_model_from_args(const Args& a);
// Prints the model's load warnings to stderr ("staticlm: warning: ...").
void print_model_warnings(const Model& model);
SessionOptions session_options_from_args(const Args& a);
GenerateOptions generate_options_from_args(const Args& a, int default_max_tokens);

int cmd_bench(const Args& a);
// verify / perplexity parse their own flags (common flags plus their own).
int cmd_verify(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);

}  // namespace staticlm::cli
