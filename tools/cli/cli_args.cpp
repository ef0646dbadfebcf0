// Flag parsing for the staticlm CLI (--name value, --name=value, --switch, and
// the short forms -m, -p, -n).
#include "cli_args.hpp"

#include <algorithm>
#include <charconv>

namespace staticlm::cli {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// Short forms as llama.cpp spells them: -m FILE, -p TEXT, -n N.
std::string long_form(const std::string& a) {
    if (a == "-m") return "--model";
    if (a == "-p") return "--prompt";
    if (a == "-n") return "--n-predict";
    return a;
}

}  // namespace

Args::Args(int argc, char** argv, int first, const std::vector<std::string>& flags,
           const std::vector<std::string>& switches) {
    for (int i = first; i < argc; ++i) {
        const std::string a = long_form(argv[i]);
        if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
            positional_.push_back(a);
            continue;
        }
        std::string name = a.substr(2), value;
        const size_t eq = name.find('=');
        const bool inline_value = eq != std::string::npos;
        if (inline_value) {
            value = name.substr(eq + 1);
            name.resize(eq);
        }
        if (contains(switches, name)) {
            if (inline_value) throw UsageError("--" + name + " takes no value");
            values_.insert_or_assign(name, std::string(1, '1'));
        } else if (contains(flags, name)) {
            if (!inline_value) {
                if (i + 1 >= argc) throw UsageError("--" + name + " needs a value");
                value = argv[++i];
            }
            values_[name] = value;
        } else {
            throw UsageError("unknown flag --" + name);
        }
    }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

int Args::integer(const std::string& name, int fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    int v = 0;
    const std::string& s = it->second;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        throw UsageError("--" + name + " expects an integer, got '" + s + "'");
    return v;
}

double Args::number(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    try {
        size_t used = 0;
        const double v = std::stod(it->second, &used);
        if (used != it->second.size()) throw std::invalid_argument("trailing");
        return v;
    } catch (const std::exception&) {
        throw UsageError("--" + name + " expects a number, got '" + it->second + "'");
    }
}

std::vector<int> Args::int_list(const std::string& name, const std::vector<int>& fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    std::vector<int> out;
    const std::string& s = it->second;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = std::min(s.find(',', start), s.size());
        const std::string item = s.substr(start, comma - start);
        int v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size())
            throw UsageError("--" + name + " expects a comma-separated list of integers, got '" +
                             s + "'");
        out.push_back(v);
        start = comma + 1;
    }
    return out;
}

}  // namespace staticlm::cli
