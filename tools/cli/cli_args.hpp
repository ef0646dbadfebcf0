// Command-line flags of the staticlm CLI: one parser for every subcommand.
// Usage errors throw UsageError (exit code 2).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace staticlm::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Args {
public:
    // flags: names that take a value; switches: names that do not.
    Args(int argc, char** argv, int first, const std::vector<std::string>& flags,
         const std::vector<std::string>& switches);

    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string str(const std::string& name, const std::string& fallback = "") const;
    int integer(const std::string& name, int fallback) const;
    double number(const std::string& name, double fallback) const;
    std::vector<int> int_list(const std::string& name, const std::vector<int>& fallback) const;
    const std::vector<std::string>& positional() const { return positional_; }
    // A copy with one flag set to value (as if given on the command line).
    Args with(const std::string& name, const std::string& value) const {
        Args copy = *this;
        copy.values_[name] = value;
        return copy;
    }

private:
    std::map<std::string, std::string> values_;
    std::vector<std::string> positional_;
};

}  // namespace staticlm::cli
