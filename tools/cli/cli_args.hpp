// Command-line flags of the staticlm CLI: each subcommand declares the flags it
// takes (with short forms, metavars, help and the default shown by --help);
// anything else is a usage error (UsageError, exit code 2).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace staticlm::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct FlagSpec {
    FlagSpec(std::string name_, std::string short_name_, std::string metavar_, std::string help_,
             std::string def_ = "", std::vector<std::string> aliases_ = {}, bool repeat_ = false)
        : name(std::move(name_)), short_name(std::move(short_name_)), metavar(std::move(metavar_)),
          help(std::move(help_)), def(std::move(def_)), aliases(std::move(aliases_)), repeat(repeat_) {}

    std::string name;                  // long name without "--"
    std::string short_name;            // "m" for -m, or ""
    std::string metavar;               // "DIR"; empty for a switch
    std::string help;
    std::string def;                   // the default as --help shows it ("" when none)
    std::vector<std::string> aliases;  // more long names ("ctx-size" for max-seq)
    bool repeat = false;               // may be given more than once (all values kept)
};

struct CommandSpec {
    std::string name;
    std::string usage;    // after "usage: staticlm "
    std::string summary;  // one or two sentences
    std::vector<FlagSpec> flags;
    std::string positional;  // metavar of positional arguments ("TEXT..."); empty: none taken
};

// Prints `staticlm <cmd> --help` (flags, short forms, defaults).
std::string command_help(const CommandSpec& spec);

class Args {
public:
    // Parses argv[first..argc) against spec. -h / --help set help(). Values
    // may start with '-' (-n -1); "--" ends the flags.
    Args(const CommandSpec& spec, int argc, char** argv, int first);

    bool help() const { return help_; }
    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string str(const std::string& name, const std::string& fallback = "") const;
    const std::vector<std::string>& all(const std::string& name) const;
    int integer(const std::string& name, int fallback) const;
    double number(const std::string& name, double fallback) const;
    std::vector<int> int_list(const std::string& name, const std::vector<int>& fallback) const;
    const std::vector<std::string>& positional() const { return positional_; }
    // The flag as the user wrote it, for messages ("-c" or "--max-seq").
    std::string spelled(const std::string& name) const;
    // A copy with one flag set to value (as if given on the command line).
    Args with(const std::string& name, const std::string& value) const;

private:
    const CommandSpec* spec_ = nullptr;
    std::map<std::string, std::vector<std::string>> values_;
    std::map<std::string, std::string> spelled_;
    std::vector<std::string> positional_;
    bool help_ = false;
};

}  // namespace staticlm::cli
