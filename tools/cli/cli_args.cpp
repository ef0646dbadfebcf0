// Flag parsing for the staticlm CLI: --name value, --name=value, -x value,
// switches, per-command flag sets and --help text.
#include "cli_args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace staticlm::cli {

namespace {

const FlagSpec* find_long(const CommandSpec& spec, const std::string& name) {
    for (const FlagSpec& f : spec.flags) {
        if (f.name == name) return &f;
        if (std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
    }
    return nullptr;
}

const FlagSpec* find_short(const CommandSpec& spec, const std::string& name) {
    for (const FlagSpec& f : spec.flags)
        if (!f.short_name.empty() && f.short_name == name) return &f;
    return nullptr;
}

}  // namespace

std::string command_help(const CommandSpec& spec) {
    std::string out = "usage: staticlm " + spec.usage + "\n" + spec.summary + "\n";
    if (!spec.positional.empty()) out += "\narguments: " + spec.positional + "\n";
    out += "\nflags:\n";
    std::vector<std::string> left;
    size_t width = 0;
    for (const FlagSpec& f : spec.flags) {
        std::string l = "  ";
        l += f.short_name.empty() ? "    " : "-" + f.short_name + ", ";
        l += "--" + f.name;
        for (const std::string& a : f.aliases) l += ", --" + a;
        if (!f.metavar.empty()) l += " " + f.metavar;
        width = std::max(width, l.size());
        left.push_back(std::move(l));
    }
    width = std::min<size_t>(width, 40);
    for (size_t i = 0; i < spec.flags.size(); ++i) {
        const FlagSpec& f = spec.flags[i];
        std::string line = left[i];
        if (line.size() < width) line.append(width - line.size(), ' ');
        line += "  " + f.help;
        if (!f.def.empty()) line += " (default: " + f.def + ")";
        if (f.repeat) line += " (repeatable)";
        out += line + "\n";
    }
    out += "  -h, --help" + std::string(width > 12 ? width - 12 : 0, ' ') + "  this text\n";
    return out;
}

Args::Args(const CommandSpec& spec, int argc, char** argv, int first) : spec_(&spec) {
    bool flags_done = false;
    for (int i = first; i < argc; ++i) {
        const std::string a = argv[i];
        if (flags_done || a.size() < 2 || a[0] != '-') {
            if (spec.positional.empty())
                throw UsageError(spec.name + " takes no positional argument, got '" + a + "'" +
                                 (spec.name == "generate" || spec.name == "chat"
                                      ? std::string(" (a prompt is given with -p TEXT)")
                                      : std::string()));
            positional_.push_back(a);
            continue;
        }
        if (a == "--") {
            flags_done = true;
            continue;
        }
        if (a == "-h" || a == "--help") {
            help_ = true;
            continue;
        }
        std::string name, value;
        bool inline_value = false;
        const FlagSpec* f = nullptr;
        if (a.compare(0, 2, "--") == 0) {
            name = a.substr(2);
            const size_t eq = name.find('=');
            if (eq != std::string::npos) {
                value = name.substr(eq + 1);
                name.resize(eq);
                inline_value = true;
            }
            f = find_long(spec, name);
        } else {
            name = a.substr(1);
            f = find_short(spec, name);
        }
        if (!f)
            throw UsageError(spec.name + " does not take " + a.substr(0, a.find('=')) + " (staticlm " + spec.name +
                             " --help lists its flags)");
        const std::string written = a.substr(0, a.find('='));
        if (f->metavar.empty()) {
            if (inline_value) throw UsageError(written + " takes no value");
            value.assign(1, '1');
        } else if (!inline_value) {
            if (i + 1 >= argc) throw UsageError(a + " needs a value (" + f->metavar + ")");
            value = argv[++i];
        }
        std::vector<std::string>& v = values_[f->name];
        if (!f->repeat) v.clear();
        v.push_back(value);
        spelled_[f->name] = written;
    }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& name) const {
    static const std::vector<std::string> none;
    auto it = values_.find(name);
    return it == values_.end() ? none : it->second;
}

std::string Args::spelled(const std::string& name) const {
    auto it = spelled_.find(name);
    return it == spelled_.end() ? "--" + name : it->second;
}

Args Args::with(const std::string& name, const std::string& value) const {
    Args copy = *this;
    copy.values_[name] = {value};
    return copy;
}

int Args::integer(const std::string& name, int fallback) const {
    if (!has(name)) return fallback;
    const std::string s = str(name);
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        throw UsageError(spelled(name) + " expects an integer, got '" + s + "'");
    return v;
}

double Args::number(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const std::string s = str(name);
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
        throw UsageError(spelled(name) + " expects a finite number, got '" + s + "'");
    return v;
}

std::vector<int> Args::int_list(const std::string& name, const std::vector<int>& fallback) const {
    if (!has(name)) return fallback;
    std::vector<int> out;
    const std::string s = str(name);
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = std::min(s.find(',', start), s.size());
        const std::string item = s.substr(start, comma - start);
        int v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size())
            throw UsageError(spelled(name) + " expects a comma-separated list of integers, got '" + s + "'");
        out.push_back(v);
        start = comma + 1;
    }
    return out;
}

}  // namespace staticlm::cli
