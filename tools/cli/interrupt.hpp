// Ctrl-C in the CLI: while a reply is being generated the first SIGINT only
// asks it to stop (interrupted() turns true); a second one, or one while no
// reply runs, ends the process the default way (status 130 in shells).
#pragma once

namespace staticlm::cli {

void install_interrupt_handler();
// Marks a reply in progress for its lifetime and clears earlier requests.
class ReplyScope {
public:
    ReplyScope();
    ~ReplyScope();
    ReplyScope(const ReplyScope&) = delete;
    ReplyScope& operator=(const ReplyScope&) = delete;
};
bool interrupted();

}  // namespace staticlm::cli
