// SIGINT handling for generate and chat (see interrupt.hpp). The handler only
// touches sig_atomic_t flags, or restores the default action and re-raises.
#include "interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace staticlm::cli {

namespace {

volatile std::sig_atomic_t g_in_reply = 0;
volatile std::sig_atomic_t g_requested = 0;

void on_sigint(int) {
    if (g_in_reply && !g_requested) {
        g_requested = 1;
        return;
    }
    const char nl = '\n';
    (void)!write(2, &nl, 1);
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
}

}  // namespace

void install_interrupt_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
}

ReplyScope::ReplyScope() {
    g_requested = 0;
    g_in_reply = 1;
}

ReplyScope::~ReplyScope() { g_in_reply = 0; }

bool interrupted() { return g_requested != 0; }

}  // namespace staticlm::cli
